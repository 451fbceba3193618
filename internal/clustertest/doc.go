// Package clustertest proves on a real Redis Cluster (3 masters, 3
// replicas, started by scripts/redis-cluster.sh) that everything which
// touches Redis works there: the inventory's reserve, release, restock,
// resize, waitlist and reconcile paths, the sold-out flag and the
// stock-changed Pub/Sub, the edge's rate limit and admission, and the
// process wiring (config, backend). A key outside its script's slot
// (CROSSSLOT) or a client that does not follow a slot's move (MOVED) only
// ever shows on a cluster; a single Redis accepts both silently. The
// failover test kills the master of a SKU's bucket and shows buying go on
// through the promoted replica without selling a unit twice.
//
// The package holds only tests.
package clustertest
