// Package contract is what the workflows and the activities agree on: each
// activity's registered name, its input and its result, and the application
// error types that carry business answers back (errors.go). It holds no
// store and reaches none, so the workflows that run activities by these
// names build without Redis or MySQL code; the activities package
// implements them and the worker registers them under these names.
//
// Every name, JSON field and error type here is written into recorded
// histories (workflows/testdata): a rename breaks the replay of running
// orders, so fields are only ever added. One file per area: order.go the
// order's activities, reconcile.go the reconciler's and the resync's,
// sale.go a fair sale's.
package contract
