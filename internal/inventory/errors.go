package inventory

import (
	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/internal/redisguard"
)

// The store answers with *flashsale.Error values: a caller branches on
// flashsale.ErrorCode(err) (SoldOut, UnknownSKU, AlreadyReleased, Invalid,
// PreheatMismatch, ResizeBusy, NotSoldOut, WaitlistFull, NotOnWaitlist),
// Unavailable when Redis could not be reached or did not answer in time,
// and Busy when this process's Redis pool was exhausted (codeOutage). An
// error without a code is Redis failing in another way.

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

// codeOutage codes *err Unavailable ("stock store unavailable") for a
// Redis outage and Busy for an exhausted pool (redisguard.Code). Every
// exported method defers it.
func codeOutage(err *error) { redisguard.Code(err, "stock store unavailable") }
