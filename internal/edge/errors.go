package edge

import (
	"fmt"
	"time"

	"github.com/flashsale/flashsale"
)

// Admit answers with *flashsale.Error values: SoldOut, UnknownSKU, Busy
// and RateLimited (inside a *RetryError saying when to retry),
// OrderIDConflict, and Unavailable when Redis did not answer and the gate
// fails closed (an unguarded edge would let the whole flood through to
// Temporal). Callers branch on flashsale.ErrorCode(err).

// Deprecated: match flashsale.ErrorCode(err) == flashsale.SoldOut.
var ErrSoldOut error = &flashsale.Error{Code: flashsale.SoldOut, Message: "sold out"}

// Deprecated: match flashsale.ErrorCode(err) == flashsale.UnknownSKU.
var ErrUnknownSKU error = &flashsale.Error{Code: flashsale.UnknownSKU, Message: "unknown sku"}

// Deprecated: match flashsale.ErrorCode(err) == flashsale.Busy.
var ErrBusy error = &flashsale.Error{Code: flashsale.Busy, Message: "busy"}

// Deprecated: match flashsale.ErrorCode(err) == flashsale.RateLimited.
var ErrRateLimited error = &flashsale.Error{Code: flashsale.RateLimited, Message: "rate limited"}

// Deprecated: match flashsale.ErrorCode(err) == flashsale.OrderIDConflict.
var ErrIDConflict error = &flashsale.Error{Code: flashsale.OrderIDConflict, Message: "order id used by another user"}

// Deprecated: match flashsale.ErrorCode(err) == flashsale.Unavailable.
var ErrUnavailable error = &flashsale.Error{Code: flashsale.Unavailable, Message: "edge unavailable"}

// Item is one order line as the gate sees it: SKU and Quantity.
//
// Deprecated: use flashsale.Item.
type Item = flashsale.Item

// RetryError says when a shed request may be retried.
type RetryError struct {
	Err   error // a Busy or RateLimited *flashsale.Error
	After time.Duration
}

func (e *RetryError) Error() string { return fmt.Sprintf("%v: retry after %v", e.Err, e.After) }
func (e *RetryError) Unwrap() error { return e.Err }
