package inventory

import "github.com/flashsale/flashsale"

// The store answers with *flashsale.Error values: a caller branches on
// flashsale.ErrorCode(err) (SoldOut, UnknownSKU, AlreadyReleased, Invalid,
// PreheatMismatch, ResizeBusy, NotSoldOut, WaitlistFull, NotOnWaitlist).
// An error without a code is Redis itself failing.

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
