package edge

import (
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
