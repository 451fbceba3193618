package workflows

import (
	"fmt"
	"slices"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/flashsale/flashsale"
)

// How an unpaid order ends; compensate gives back what it held.
var (
	expired             = outcome{status: flashsale.StatusExpired, reason: flashsale.PaymentTimeout}
	cancelledByBuyer    = outcome{status: flashsale.StatusCancelled, reason: flashsale.CancelledByUser}
	cancelledByOperator = outcome{status: flashsale.StatusCancelled, reason: "workflow cancelled by operator"}
)

// awaitPayment waits for money, a cancel or the deadline, whichever comes
// first, then settles the order.
func (o *order) awaitPayment(ctx workflow.Context) error {
	for {
		// Money our door received by pay_by may reach the order a moment
		// later (arrivalGrace): the order waits that long for it. pay_by
		// moves only by the provider's extension (terms.go).
		closeAt := o.view.PayBy.Add(arrivalGrace)
		remaining := closeAt.Sub(workflow.Now(ctx))
		ok := false
		var err error
		if remaining > 0 {
			ok, err = workflow.AwaitWithOptions(ctx, workflow.AwaitOptions{
				Timeout:      remaining,
				TimerOptions: workflow.TimerOptions{Summary: "payment deadline"},
			}, func() bool {
				return len(o.pending) > 0 || o.cancelRequested || o.deadlineMoved || (o.paymentFailed && o.releaseOnFailed)
			})
		}
		if temporal.IsCanceledError(err) {
			// An operator cancelled the workflow: treat it as a cancel
			// (compensate runs on a disconnected context, so it still
			// runs).
			return o.compensate(ctx, cancelledByOperator)
		}
		if err != nil {
			return fmt.Errorf("await payment: %w", err)
		}
		switch {
		case len(o.pending) > 0:
			p := o.pending[0]
			if _, done := o.outcomes[p.TransactionID]; done {
				// The same payment twice: the API's pay update and the
				// signal it falls back to when the update is slow. The
				// first was applied; nobody waits on this one.
				o.pending = o.pending[1:]
				continue
			}
			if o.arrivedLate(ctx, p) && !o.capturesLate(ctx) {
				// Money after the deadline: the order is over. It closes
				// now rather than at closeAt, and finish() records the
				// payment for refund.
				o.logger.Info("payment received after the deadline", "transaction_id", p.TransactionID,
					"received_at", p.ReceivedAt, "pay_by", o.view.PayBy)
				return o.closeUnpaid(ctx)
			}
			if !o.takesPayments(ctx) {
				// Payments kept the order open past pay_by until its
				// bound: no new one starts. Close; finish() settles the
				// rest late.
				return o.closeUnpaid(ctx)
			}
			// Money first: a payment that arrived together with a cancel
			// or the deadline wins, because the buyer has paid.
			o.pending = o.pending[1:]
			applied, err := o.applyPayment(ctx, p)
			if err != nil {
				return err
			}
			if o.view.Status == flashsale.StatusPaid {
				return nil
			}
			if o.noUnit {
				return o.compensate(ctx, soldOutAtPayment)
			}
			if !applied {
				// The database did not answer by the payment's bound.
				// The payment stays pending; CloseOrder's compare-and-set
				// under the order lock decides whether it landed after
				// all (the order is PAID) or not (finish() records it for
				// refund).
				o.pending = slices.Insert(o.pending, 0, p)
				if ctx.Err() != nil {
					return o.compensate(ctx, cancelledByOperator)
				}
				return o.closeUnpaid(ctx)
			}
		case o.cancelRequested:
			return o.compensate(ctx, cancelledByBuyer)
		case o.releasesOnFailure(ctx):
			return o.compensate(ctx, cancelledPaymentFailed)
		case o.deadlineMoved:
			o.deadlineMoved = false
		case !ok && o.extending:
			// The deadline came while the hold's extension is being
			// written: its answer decides which deadline holds.
			if err := workflow.Await(ctx, func() bool { return !o.extending }); err != nil {
				return fmt.Errorf("await the hold's extension: %w", err)
			}
		case !ok:
			return o.compensate(ctx, expired)
		}
	}
}

// closeUnpaid closes an order whose deadline has passed without payment:
// cancelled if the buyer asked meanwhile, expired otherwise.
func (o *order) closeUnpaid(ctx workflow.Context) error {
	if o.cancelRequested {
		return o.compensate(ctx, cancelledByBuyer)
	}
	return o.compensate(ctx, expired)
}
