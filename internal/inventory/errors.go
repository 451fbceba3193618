package inventory

import "github.com/flashsale/flashsale"

// The store answers with *flashsale.Error values: a caller branches on
// flashsale.ErrorCode(err) (SoldOut, UnknownSKU, AlreadyReleased, Invalid,
// PreheatMismatch, ResizeBusy, NotSoldOut, WaitlistFull, NotOnWaitlist).
// An error without a code is Redis itself failing.

// MaxBuckets caps the bucket count.
//
// Deprecated: use flashsale.MaxBuckets.
const MaxBuckets = flashsale.MaxBuckets

// Deprecated: match flashsale.ErrorCode(err) == flashsale.SoldOut.
var ErrSoldOut error = &flashsale.Error{Code: flashsale.SoldOut, Message: "sold out"}

// Deprecated: match flashsale.ErrorCode(err) == flashsale.UnknownSKU.
var ErrUnknownSKU error = &flashsale.Error{Code: flashsale.UnknownSKU, Message: "unknown sku"}

// Deprecated: match flashsale.ErrorCode(err) == flashsale.AlreadyReleased.
var ErrReleased error = &flashsale.Error{Code: flashsale.AlreadyReleased, Message: "reservation already released"}

// Deprecated: match flashsale.ErrorCode(err) == flashsale.PreheatMismatch.
var ErrPreheatMismatch error = &flashsale.Error{Code: flashsale.PreheatMismatch, Message: "preheat mismatch: redis buckets do not sum to db available stock"}

// Deprecated: match flashsale.ErrorCode(err) == flashsale.Invalid.
var ErrInvalidArgument error = &flashsale.Error{Code: flashsale.Invalid, Message: "invalid argument"}

// Deprecated: match flashsale.ErrorCode(err) == flashsale.ResizeBusy.
var ErrResizeBusy error = &flashsale.Error{Code: flashsale.ResizeBusy, Message: "another resize of this sku is running"}

// Deprecated: match flashsale.ErrorCode(err) == flashsale.NotSoldOut.
var ErrNotSoldOut error = &flashsale.Error{Code: flashsale.NotSoldOut, Message: "not sold out"}

// Deprecated: match flashsale.ErrorCode(err) == flashsale.WaitlistFull.
var ErrWaitlistFull error = &flashsale.Error{Code: flashsale.WaitlistFull, Message: "waitlist full"}

// Deprecated: match flashsale.ErrorCode(err) == flashsale.NotOnWaitlist.
var ErrNotWaiting error = &flashsale.Error{Code: flashsale.NotOnWaitlist, Message: "not on the waitlist"}

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
