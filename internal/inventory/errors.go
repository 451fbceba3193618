package inventory

import (
	"fmt"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/internal/redisguard"
)

// The store answers with *flashsale.Error values: a caller branches on
// flashsale.ErrorCode(err) (SoldOut, UnknownSKU, AlreadyReleased, Invalid,
// PreheatMismatch, ResizeBusy, NotSoldOut, WaitlistFull, NotOnWaitlist),
// and Unavailable when Redis could not be reached or did not answer in time
// (codeOutage). An error without a code is Redis failing in another way.

// invalidf marks a caller mistake (an empty id, a non-positive quantity, a
// bad bucket count): retrying it cannot succeed, so a Temporal activity
// treats it as non-retryable.
func invalidf(format string, args ...any) error {
	return flashsale.Errorf(flashsale.Invalid, format, args...)
}

// validateLoad checks what Preheat and Restore load into a SKU's buckets.
func validateLoad(sku string, available int64, buckets int) error {
	if err := validateSKU(sku); err != nil {
		return err
	}
	if available < 0 {
		return invalidf("available must not be negative, got %d", available)
	}
	return flashsale.CheckBuckets(buckets)
}

// errUnavailable is the code of a Redis outage; its words are for the
// client, the cause (with the host) stays wrapped behind it for the logs.
var errUnavailable = &flashsale.Error{Code: flashsale.Unavailable, Message: "stock store unavailable"}

// codeOutage codes *err Unavailable when Redis could not be reached or did
// not answer in time, by the same test the circuit breaker trips on
// (redisguard.IsOutage: a refused or timed-out dial, a dropped connection,
// a deadline, a pool timeout, CLUSTERDOWN during a failover; never a
// caller's own cancellation). Every exported method defers it, so each door
// reads one code. The cause stays wrapped: the breaker, errors.Is and the
// logs still see the driver's error.
func codeOutage(err *error) {
	if *err != nil && flashsale.ErrorCode(*err) == flashsale.Internal && redisguard.IsOutage(*err) {
		*err = fmt.Errorf("%w: %w", errUnavailable, *err)
	}
}
