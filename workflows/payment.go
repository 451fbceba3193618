package workflows

import (
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/activities/contract"
)

const (
	// paymentGrace is how long past pay_by a payment being applied may keep
	// the order open; after it the order closes (CloseOrder decides if the
	// payment landed) and no further payment is started. Half a minute is
	// eight attempts of ConfirmPayment (10 s each, backoff from 200 ms),
	// enough to ride out a database failover or a lock held by a slow
	// transaction, and it keeps an order with a stuck payment inside the
	// invariant checker's grace (audit.DefaultGrace, a minute past pay_by):
	// only an order whose compensation cannot run either is reported.
	paymentGrace = 30 * time.Second
	// paymentFloor is the least time a payment activity gets, so a payment
	// started late (handled after pay_by, e.g. queued behind another) still
	// has a fair try. An order therefore closes by pay_by + paymentGrace +
	// paymentFloor, a minute, at the latest.
	paymentFloor = 30 * time.Second
	// stallAfter is how long compensation may run past pay_by (or past its
	// start, when that is later) before the order shows STALLED: the
	// checker's grace too.
	stallAfter = time.Minute
)

// arrivalGrace is how long past pay_by an order waits for payments the API
// received before pay_by to reach it. It covers the API's own wait for the
// pay update (orders.payWait) plus the signal it falls back to, with room
// for a loaded worker: the unit comes back to sale this much later, which
// a 15-minute window does not notice.
const arrivalGrace = 5 * time.Second

// arrivedLate reports whether p reached the API after the deadline. A
// payment without an arrival time (a signal sent by hand, from the CLI or
// the Web UI) is judged by the workflow's clock.
func (o *order) arrivedLate(ctx workflow.Context, p Payment) bool {
	at := p.ReceivedAt
	if at.IsZero() {
		at = workflow.Now(ctx)
	}
	return at.After(o.view.PayBy)
}

// inTaskBudget bounds a settlement step inside the workflow task, retries
// included (inTaskOptions).
const inTaskBudget = 10 * time.Second

// inTaskOptions are the options of a settlement step run inside the workflow
// task. MySQL and Redis answer in milliseconds; a step that
// has no answer within ten seconds (two attempts of five) is not going to
// get one soon, and holding the task longer would hold the order's updates
// too: it continues as a regular activity, with its own retries.
func inTaskOptions(ctx workflow.Context) workflow.Context {
	return workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout:    5 * time.Second,
		ScheduleToCloseTimeout: inTaskBudget,
		RetryPolicy:            backoff(50*time.Millisecond, 2*time.Second),
	})
}

// inTaskFirst runs one settlement step: first as a local activity inside
// the current workflow task, then, if that got no answer, as the regular
// activity run(ctx) starts. A business answer from the local attempt is
// final (the database decided); so is the context's end. Each regular
// activity would cost the server three state transitions and a task round
// trip more, so the local attempt is the normal path.
func (o *order) inTaskFirst(ctx workflow.Context, summary string, activity, in, out any, run func(workflow.Context) error) error {
	err := workflow.ExecuteLocalActivity(inTaskOptions(ctx), activity, in).Get(ctx, out)
	if err == nil || answered(err) || ctx.Err() != nil {
		return err
	}
	o.logger.Warn(summary+": no answer inside the workflow task; continuing as an activity", "error", err)
	if o.fellBack != nil {
		o.fellBack()
	}
	return run(ctx)
}

// takesPayments reports whether an open order may still start applying a
// payment.
func (o *order) takesPayments(ctx workflow.Context) bool {
	return workflow.Now(ctx).Before(o.view.PayBy.Add(paymentGrace))
}

// paymentOptions are the options of ConfirmPayment and RecordRefund while
// the order is open. Bounded, the activity must answer by pay_by +
// paymentGrace (but gets at least paymentFloor): a retrying activity can no
// longer hold an order, and its unit, much past its deadline. A payment
// arriving in the last second gets paymentGrace and a second. started is
// when applying the payment began (before a local attempt, see settle): the
// floor counts from there, so the local attempt does not stretch the bound.
func (o *order) paymentOptions(ctx workflow.Context, bounded bool, summary string, started time.Time) workflow.Context {
	if !bounded {
		return o.activityOptions(ctx, summary)
	}
	now := workflow.Now(ctx)
	left := o.view.PayBy.Add(paymentGrace).Sub(now)
	floor := max(paymentFloor-now.Sub(started), time.Second)
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout:    settleAttempt,
		ScheduleToCloseTimeout: max(left, floor),
		RetryPolicy:            backoff(200*time.Millisecond, time.Minute),
		Summary:                summary,
	})
}

// errNotInTime: a bounded payment activity ran out of time without an
// answer from the database.
var errNotInTime = errors.New("payment not applied in time")

// execPayment runs a payment activity. Bounded, an attempt that gave up
// before pay_by (the retry policy stops early when its next backoff would
// overrun the timeout) is started again, the buyer being still in time; one
// that gave up later returns errNotInTime. Business answers are returned as
// they are.
func (o *order) execPayment(ctx workflow.Context, bounded bool, summary string, activity, in, out any) error {
	started := workflow.Now(ctx)
	return o.inTaskFirst(ctx, summary, activity, in, out, func(ctx workflow.Context) error {
		return o.execPaymentActivity(ctx, bounded, summary, started, activity, in, out)
	})
}

// execPaymentActivity is execPayment's regular activity.
func (o *order) execPaymentActivity(ctx workflow.Context, bounded bool, summary string, started time.Time, activity, in, out any) error {
	for {
		err := workflow.ExecuteActivity(o.paymentOptions(ctx, bounded, summary, started), activity, in).Get(ctx, out)
		switch {
		case err == nil, !bounded, answered(err):
			return err
		case workflow.Now(ctx).Before(o.view.PayBy) && ctx.Err() == nil:
			o.logger.Warn(summary+": no answer yet, trying again before the deadline", "error", err)
		default:
			o.logger.Error(summary+": no answer by its bound; the order closes with the payment pending",
				"pay_by", o.view.PayBy, "error", err)
			return fmt.Errorf("%s: %w: %w", summary, errNotInTime, err)
		}
	}
}

// applyPayment handles one payment while the order is open, bounded by
// pay_by (paymentOptions). It reports false when the payment got no answer
// in time: nothing is known about it then, and the caller closes the
// order, whose CloseOrder decides under the order lock whether it landed
// after all.
func (o *order) applyPayment(ctx workflow.Context, p Payment) (bool, error) {
	const bounded = true
	if p.Amount != o.view.Amount {
		o.logger.Warn("payment amount mismatch", "transaction_id", p.TransactionID, "paid", p.Amount, "amount", o.view.Amount)
		return o.refund(ctx, bounded, p, flashsale.AmountMismatch)
	}
	if o.deferred {
		// A booked order takes its units now (deduct.go).
		took, err := o.takeUnits(ctx, p)
		switch {
		case errors.Is(err, errNotInTime):
			return false, nil
		case err != nil:
			return false, err
		case !took:
			return true, nil
		}
	}
	var res contract.ConfirmPaymentResult
	err := o.execPayment(ctx, bounded, "confirm payment "+p.TransactionID, contract.ConfirmPayment,
		contract.ConfirmPaymentInput{OrderID: o.in.OrderID, TransactionID: p.TransactionID, Amount: p.Amount}, &res)
	switch {
	case errors.Is(err, errNotInTime):
		return false, nil
	case codeOf(err) == flashsale.TransactionConflict:
		o.conflict(p, err)
		return true, nil
	case codeOf(err) == flashsale.Invalid:
		// The database refused the payment for good and rolled it back:
		// nothing is captured, the money goes back. The order stays open.
		o.logger.Error("payment refused by the database for good; recording it for refund",
			"transaction_id", p.TransactionID, "error", err)
		return o.refund(ctx, bounded, p, flashsale.PaymentFailed)
	case err != nil:
		return false, fmt.Errorf("confirm payment %s: %w", p.TransactionID, err)
	}
	out := PaymentOutcome{OrderID: o.in.OrderID, TransactionID: p.TransactionID, Status: flashsale.StatusPaid}
	if res.RefundRequired() {
		// The database saw the order closed or paid by someone else; it
		// recorded the refund. Should not happen while the workflow owns
		// the order, but the database is the guard.
		out.Status = res.OrderStatus
		out.Refund, out.Reason = RefundRequired, res.Reason
		// A booked order's payment MySQL found no unit for: the order
		// closes (deduct.go).
		o.noUnit = o.deferred && res.Reason == flashsale.SoldOut
		o.record(out)
		return true, nil
	}
	o.record(out)
	o.setStatus(ctx, flashsale.StatusPaid, "")
	return true, nil
}

// refund records money the order cannot keep and answers the payment from
// what the database stored. bounded is applyPayment's: false for late
// settles, which retry until the database answers (the order is closed,
// its units are back; only the answer waits).
func (o *order) refund(ctx workflow.Context, bounded bool, p Payment, reason flashsale.Code) (bool, error) {
	var res contract.RecordRefundResult
	err := o.execPayment(ctx, bounded, "record refund "+p.TransactionID, contract.RecordRefund,
		contract.RecordRefundInput{OrderID: o.in.OrderID, TransactionID: p.TransactionID, Amount: p.Amount, Reason: reason}, &res)
	out := PaymentOutcome{
		OrderID: o.in.OrderID, TransactionID: p.TransactionID, Status: o.view.Status,
		Refund: RefundRequired, Reason: reason,
	}
	switch {
	case errors.Is(err, errNotInTime):
		return false, nil
	case codeOf(err) == flashsale.TransactionConflict:
		o.conflict(p, err)
		return true, nil
	case codeOf(err) == flashsale.Invalid:
		// Still answered as a refund: the money must go back. The record
		// of it is this workflow's history (the order's Payments).
		o.logger.Error("refund refused by the database for good; only this workflow records it",
			"transaction_id", p.TransactionID, "error", err)
		out.Reason = flashsale.PaymentFailed
		o.record(out)
		return true, nil
	case err != nil:
		return false, fmt.Errorf("record refund %s: %w", p.TransactionID, err)
	}
	if res.Captured() {
		// The transaction paid this very order: a ConfirmPayment the
		// workflow stopped waiting for committed, and CloseOrder found the
		// order PAID. The money is kept.
		if o.view.Status != flashsale.StatusPaid {
			o.logger.Error("transaction captured for an order the workflow does not see paid",
				"transaction_id", p.TransactionID, "status", o.view.Status)
		}
		out.Status, out.Refund, out.Reason = flashsale.StatusPaid, "", ""
	}
	o.record(out)
	return true, nil
}

// conflict answers a payment whose transaction id is recorded for another
// order. The money is that order's: this one neither takes it nor owes it
// back, and stays as it is (payable with a transaction of its own, and
// expiring on time).
func (o *order) conflict(p Payment, err error) {
	var d contract.TransactionConflictDetails
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) && appErr.HasDetails() {
		if derr := appErr.Details(&d); derr != nil {
			o.logger.Warn("decode transaction conflict details", "error", derr)
		}
	}
	o.logger.Warn("transaction recorded for another order; not taken",
		"transaction_id", p.TransactionID, "recorded_for", d.RecordedFor, "status", o.view.Status)
	o.record(PaymentOutcome{
		OrderID: o.in.OrderID, TransactionID: p.TransactionID, Status: o.view.Status,
		Conflict: true, Reason: flashsale.TransactionConflict,
	})
}

func (o *order) record(out PaymentOutcome) {
	o.outcomes[out.TransactionID] = out
	o.view.Payments = append(o.view.Payments, out)
}

// answerLatePayment answers a payment that arrived after the order closed (or
// that was still pending when it closed): recorded for refund, unless the
// database says it paid this order or belongs to another.
func (o *order) answerLatePayment(ctx workflow.Context, p Payment) error {
	if _, ok := o.outcomes[p.TransactionID]; ok {
		return nil // a repeat of a payment already handled
	}
	reason := flashsale.OrderClosed
	if o.view.Status == flashsale.StatusPaid {
		reason = flashsale.AlreadyPaid
	}
	_, err := o.refund(ctx, false, p, reason)
	return err
}
