package activities

import (
	"fmt"

	"go.temporal.io/sdk/temporal"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/activities/contract"
)

// refuse is how every activity gives a business answer: a non-retryable
// application error of the type the table gives err's code, with op (what
// the activity was doing, for the Web UI and the logs) as its message and
// err as its cause. details, if any, are for the workflow to decode.
func refuse(op string, err error, details ...any) error {
	return refuseAs(flashsale.ErrorCode(err), op, err, details...)
}

// refuseAs is refuse with the code chosen by the activity rather than read
// from err, for answers the store gives under another name (a degraded
// order's "insufficient stock" is sold out, not drift).
func refuseAs(code flashsale.Code, op string, err error, details ...any) error {
	typ := contract.TypeFor(code)
	if typ == "" {
		// A code without a type would reach the workflow as a retryable
		// error and be retried forever: a programming error, said loudly.
		return fmt.Errorf("%s: code %s has no activity error type: %w", op, code, err)
	}
	return temporal.NewNonRetryableApplicationError(op, typ, err, details...)
}
