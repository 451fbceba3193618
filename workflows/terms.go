package workflows

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/activities/contract"
)

// An order's rules for money at the deadline's edge, from its SKUs' terms
// (flashsale.Terms), which CreateOrder copies onto the order: late money
// captured while the order holds its units, a FAILED payment releasing them
// at once, and one extension of the hold by the payment provider. Each path
// is new since the first release and asks its version where an order
// reaches it (docs/versioning.md); orders that never reach one write no
// marker.
const (
	// lateCaptureChangeID: a payment after pay_by on a capture_if_held
	// order is applied while the order still holds its units, instead of
	// closing the order.
	lateCaptureChangeID = "late-payment-capture"
	// failedReleaseChangeID: a FAILED payment closes a release_on_failed
	// order at once.
	failedReleaseChangeID = "release-on-failed-payment"
	// holdExtensionChangeID: the provider's extension of the hold writes
	// the new pay_by (ExtendHold) and the deadline moves.
	holdExtensionChangeID = "hold-extension"
)

// cancelledPaymentFailed is how a FAILED payment ends a release_on_failed
// order.
var cancelledPaymentFailed = outcome{status: flashsale.StatusCancelled, reason: flashsale.PaymentFailed}

// termsOf keeps the order's rules CreateOrder read from its SKUs.
func (o *order) termsOf(created contract.CreateOrderResult) {
	o.lateCapture, o.releaseOnFailed = created.LateCapture, created.ReleaseOnFailed
}

// capturesLate reports whether a payment that arrived after pay_by is
// applied instead of closing the order: the order's SKUs all say
// capture_if_held, and it still holds its units (the caller is the wait
// for money; compensation has not run). MySQL's compare-and-set in
// ConfirmPayment still decides.
func (o *order) capturesLate(ctx workflow.Context) bool {
	if !o.lateCapture {
		return false
	}
	return workflow.GetVersion(ctx, lateCaptureChangeID, workflow.DefaultVersion, 1) == 1
}

// releasesOnFailure reports whether a FAILED payment the order was told of
// closes it now.
func (o *order) releasesOnFailure(ctx workflow.Context) bool {
	if !o.paymentFailed || !o.releaseOnFailed {
		return false
	}
	return workflow.GetVersion(ctx, failedReleaseChangeID, workflow.DefaultVersion, 1) == 1
}

// Application error types of the extend-hold update's refusals; the order
// service maps them to codes.
const (
	ErrTypeHoldExtended = "HoldExtended"
	ErrTypeNotPayable   = "OrderClosed"
	ErrTypeBadExtension = "InvalidRequest"
)

// validateExtend refuses, before anything is written to history, an
// extension the order cannot take: out of bounds, for an order not awaiting
// payment or past its pay_by, or a second one.
func (o *order) validateExtend(ctx workflow.Context, r HoldExtension) error {
	switch {
	case o.extended:
		return temporal.NewNonRetryableApplicationError("the order's hold was extended once already", ErrTypeHoldExtended, nil)
	case r.ExtendBy <= 0 || r.ExtendBy > flashsale.MaxHoldExtension:
		return temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("extend_by must be 1s-%s", flashsale.Duration(flashsale.MaxHoldExtension)), ErrTypeBadExtension, nil)
	case !o.reserved || o.view.Status != flashsale.StatusPendingPayment || !workflow.Now(ctx).Before(o.view.PayBy):
		return temporal.NewNonRetryableApplicationError("the order is not awaiting payment", ErrTypeNotPayable, nil)
	}
	return nil
}

// handleExtend moves the order's pay_by by r.ExtendBy, once: in MySQL
// first (ExtendHold, under the order lock, so receipts and the checker
// judge by the new deadline), then the workflow's wait.
func (o *order) handleExtend(ctx workflow.Context, r HoldExtension) (HoldExtended, error) {
	o.extended, o.extending = true, true
	defer func() { o.extending = false }()
	workflow.GetVersion(ctx, holdExtensionChangeID, workflow.DefaultVersion, 1)
	in := contract.ExtendHoldInput{OrderID: o.in.OrderID, From: o.view.PayBy, To: o.view.PayBy.Add(r.ExtendBy)}
	var res contract.ExtendHoldResult
	lctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout: 5 * time.Second, ScheduleToCloseTimeout: inTaskBudget,
		RetryPolicy: backoff(50*time.Millisecond, 2*time.Second),
	})
	if err := workflow.ExecuteLocalActivity(lctx, contract.ExtendHold, in).Get(ctx, &res); err != nil {
		o.logger.Warn("hold not extended", "error", err)
		if code := codeOf(err); code == flashsale.HoldExtended || code == flashsale.OrderClosed {
			return HoldExtended{}, temporal.NewNonRetryableApplicationError(err.Error(), contract.TypeFor(code), nil)
		}
		return HoldExtended{}, fmt.Errorf("extend hold: %w", err)
	}
	o.logger.Info("hold extended", "pay_by", res.PayBy, "reason", r.Reason)
	o.view.PayBy, o.view.HoldExtended, o.deadlineMoved = res.PayBy, true, true
	workflow.SetCurrentDetails(ctx, o.details())
	return HoldExtended{OrderID: o.in.OrderID, PayBy: res.PayBy}, nil
}
