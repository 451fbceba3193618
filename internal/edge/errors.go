package edge

import (
	"errors"
	"fmt"
	"time"
)

// Admit answers with *flashsale.Error values: SoldOut, UnknownSKU, Busy
// and RateLimited (inside a *RetryError saying when to retry),
// OrderIDConflict, and Unavailable when Redis did not answer and the gate
// fails closed (an unguarded edge would let the whole flood through to
// Temporal). Callers branch on flashsale.ErrorCode(err).

// RetryError says when a shed request may be retried.
type RetryError struct {
	Err   error // a Busy or RateLimited *flashsale.Error
	After time.Duration
}

func (e *RetryError) Error() string { return fmt.Sprintf("%v: retry after %v", e.Err, e.After) }
func (e *RetryError) Unwrap() error { return e.Err }

// SKUError names the SKU that decided a refusal (SoldOut, Busy): one this
// gate knows exists, because it read the SKU's stock, holds it as sold out
// or has its units in flight. Requests name SKUs of their own choosing;
// only a SKU named here (or an item of an admitted request) is real, so
// callers keeping anything per SKU (metrics) note this one and no other.
type SKUError struct {
	SKU string
	Err error
}

func (e *SKUError) Error() string { return e.Err.Error() }
func (e *SKUError) Unwrap() error { return e.Err }

// decidedBy marks err as decided by sku (see SKUError).
func decidedBy(sku string, err error) error { return &SKUError{SKU: sku, Err: err} }

// DecidingSKU is the SKU that decided err, if a known one did.
func DecidingSKU(err error) (string, bool) {
	if e, ok := errors.AsType[*SKUError](err); ok {
		return e.SKU, true
	}
	return "", false
}
