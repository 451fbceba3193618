package orders

import "github.com/flashsale/flashsale"

// The package's sentinels before issue 10; match flashsale.ErrorCode(err).
//
// Deprecated: use flashsale.ErrorCode.
var (
	ErrInvalid     error = &flashsale.Error{Code: flashsale.Invalid, Message: "invalid request"}
	ErrNotFound    error = &flashsale.Error{Code: flashsale.OrderNotFound, Message: "order not found"}
	ErrClosed      error = &flashsale.Error{Code: flashsale.OrderClosed, Message: "order closed"}
	ErrIDConflict  error = &flashsale.Error{Code: flashsale.OrderIDConflict, Message: "order id already used by another order"}
	ErrUnavailable error = &flashsale.Error{Code: flashsale.Unavailable, Message: "order service unavailable"}
)
