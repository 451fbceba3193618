package workflows

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/activities/contract"
)

// Compensation is the order's undo list, as in Temporal's saga sample: each
// step that takes something pushes, right after it, the step that gives it
// back, and compensate runs them last first. An order holds at most two:
//
//	units in redis     pushed once ReserveStock ran, unless it refused the
//	                   whole order (even a failed attempt may have taken
//	                   units); gives them to the first buyer on the SKU's
//	                   waitlist when the order closed unpaid, back on open
//	                   sale otherwise (giveBackUnits)
//	order in database  pushed once CreateOrder wrote the order (CloseOrder,
//	                   closeInDatabase) or failed without an answer
//	                   (CloseOrder with Abandon, abandonInDatabase)
//
// so the database is undone before Redis: Redis never offers a unit MySQL
// still holds frozen.

// What an undo step gives back; the names appear in the logs.
const (
	undoRedis    = "units in redis"
	undoDatabase = "order in database"
)

type undoStep struct {
	what string
	run  func(ctx workflow.Context, end outcome) error
}

// outcome is how compensation ends the order.
type outcome struct {
	status flashsale.Status
	// reason is a flashsale code (SOLD_OUT, PAYMENT_TIMEOUT, ...), or an
	// operator's words.
	reason flashsale.Code
	// detail is for the log only.
	detail string
}

// rejection is the outcome of an order refused with code; err says why.
func rejection(code flashsale.Code, err error) outcome {
	return outcome{status: flashsale.StatusRejected, reason: code, detail: err.Error()}
}

func (o *order) pushUndo(what string, run func(workflow.Context, outcome) error) {
	o.undo = append(o.undo, undoStep{what: what, run: run})
}

// errFoundPaid ends compensation early: closing the order found it paid,
// its units are sold and nothing goes back.
var errFoundPaid = errors.New("order found paid")

// compensate runs the undo list and ends the order as end says. It runs on
// a disconnected context (Temporal's cancellation sample): an operator's
// cancel of the workflow must not stop the units from coming back.
//
// Its activities never give up, because the units must come back. On an
// order that closes unpaid, a watch shows the order STALLED while
// compensation runs past its bound (watchStall), and the final status is
// set once it completes.
func (o *order) compensate(ctx workflow.Context, end outcome) error {
	ctx, _ = workflow.NewDisconnectedContext(ctx)
	if end.status == flashsale.StatusRejected {
		return o.runUndo(ctx, end)
	}
	var stopWatch func()
	began := workflow.Now(ctx)
	// Compensation settling inside this task needs no watch: the watch
	// starts only if a step falls back to an activity (inTaskFirst), which
	// keeps a timer out of every normal history.
	o.fellBack = func() {
		if stopWatch == nil {
			stopWatch = o.watchStall(ctx, end.reason, began)
		}
	}
	defer func() { o.fellBack = nil }()
	err := o.runUndo(ctx, end)
	if stopWatch != nil {
		stopWatch()
	}
	if err == nil && o.view.Status == flashsale.StatusStalled {
		o.logger.Info("compensation completed after a stall", "status", o.closedAs)
		o.setStatus(ctx, o.closedAs, o.closedReason)
	}
	return err
}

// runUndo runs the undo steps, last pushed first, and shows the outcome.
// When it shows matters to the recorded histories and to the buyer: a
// closed order shows it as soon as the database has closed it (MySQL
// decides; CloseOrder may even find the order paid), and so does a
// rejection of a degraded order, whose buyer is not kept waiting for Redis
// to come back. Any other rejection answers once its units are back.
func (o *order) runUndo(ctx workflow.Context, end outcome) error {
	shown := false
	show := func() {
		if !shown {
			shown = true
			o.conclude(ctx, end)
		}
	}
	answerFirst := end.status != flashsale.StatusRejected || o.view.Degraded
	for _, step := range slices.Backward(o.undo) {
		if step.what == undoRedis && answerFirst {
			show()
		}
		o.logger.Debug("compensating", "undo", step.what, "status", end.status)
		if err := step.run(ctx, end); err != nil {
			if errors.Is(err, errFoundPaid) {
				return nil
			}
			return err
		}
	}
	show()
	return nil
}

// conclude shows how the order ended. A rejection also answers the
// buyer's reserve update.
func (o *order) conclude(ctx workflow.Context, end outcome) {
	if end.status == flashsale.StatusRejected {
		o.logger.Info("order rejected", "reason", end.reason, "detail", end.detail)
		o.setStatus(ctx, flashsale.StatusRejected, end.reason)
		o.reserved = true
		return
	}
	o.endAs(ctx, end.status, end.reason)
}

// closeInDatabase is the undo of a written order: CloseOrder's
// compare-and-set from PENDING_PAYMENT (frozen -> available). If it finds
// the order PAID, a ConfirmPayment the workflow had stopped waiting for
// (applyPayment's bound) committed after all: the order is paid, its units
// are sold, nothing goes back.
func (o *order) closeInDatabase(ctx workflow.Context, end outcome) error {
	err := o.closeUntilDecided(ctx, end.status, end.reason)
	switch {
	case err == nil && o.view.Status == flashsale.StatusPaid:
		return errFoundPaid // a payment received in time was found and applied
	case codeOf(err) == flashsale.AlreadyPaid:
		o.logger.Warn("order paid by a payment that committed late; not closing it", "wanted", end.status)
		o.endAs(ctx, flashsale.StatusPaid, "")
		return errFoundPaid
	case err != nil:
		return fmt.Errorf("close order as %s: %w", end.status, err)
	}
	return nil
}

// abandonInDatabase is the undo of a CreateOrder that got no answer: the
// order may or may not exist, and a tombstone keeps a late attempt from
// creating it. A regular activity, not tried inside the task first: the
// database just failed to answer CreateOrder, so a local attempt would
// only hold the workflow task.
func (o *order) abandonInDatabase(ctx workflow.Context, end outcome) error {
	err := workflow.ExecuteActivity(o.activityOptions(ctx, "release order in database"), contract.CloseOrder,
		contract.CloseOrderInput{
			OrderID: o.in.OrderID, Status: flashsale.StatusCancelled, Reason: end.reason, Abandon: true,
		}).Get(ctx, nil)
	if err != nil {
		return fmt.Errorf("close order after failed create: %w", err)
	}
	return nil
}

// giveBackUnits is the undo of the Redis reservation. An expired or
// cancelled order's units, and a rejected offer's (offersUnitsOn), go to
// the first buyer waiting for the SKU if there is one (offerToWaitlist),
// otherwise back on open sale. A degraded
// order's units came back to MySQL only, never having left Redis's
// buckets, and the resync CloseOrder asked for puts them on sale: its
// release only returns what an earlier attempt may have taken (its
// tombstones also keep an abandoned attempt from taking any later).
func (o *order) giveBackUnits(ctx workflow.Context, end outcome) error {
	if o.offersUnitsOn(end) {
		offered, err := o.offerToWaitlist(ctx)
		if err != nil || offered {
			return err
		}
	}
	var back []flashsale.Item
	for _, it := range o.in.Items {
		if !slices.Contains(o.drifted, it.SKU) {
			back = append(back, it)
		}
	}
	if len(back) == 0 {
		return nil // every unit drifted: none of them exists
	}
	return o.releaseRedis(ctx, back)
}

func (o *order) releaseRedis(ctx workflow.Context, items []flashsale.Item) error {
	err := o.exec(ctx, "put units back on sale", contract.ReleaseStock,
		contract.ReleaseStockInput{OrderID: o.in.OrderID, Items: items, FromOrder: o.in.FromOrder}, nil)
	if err != nil {
		return fmt.Errorf("release redis stock: %w", err)
	}
	return nil
}

// watchStall marks the order STALLED, logged at ERROR, if compensation is
// still running stallAfter past pay_by (or past began, when compensation
// began later, e.g. a cancel). The returned stop ends the watch.
func (o *order) watchStall(ctx workflow.Context, reason flashsale.Code, began time.Time) (stop func()) {
	at := o.view.PayBy
	if began.After(at) {
		at = began
	}
	at = at.Add(stallAfter)
	wctx, cancel := workflow.WithCancel(ctx)
	workflow.Go(wctx, func(ctx workflow.Context) {
		timer := workflow.NewTimerWithOptions(ctx, at.Sub(workflow.Now(ctx)),
			workflow.TimerOptions{Summary: "compensation stall deadline"})
		if err := timer.Get(ctx, nil); err != nil {
			return // compensation finished in time and cancelled the watch
		}
		o.logger.Error("compensation stalled: units not back yet, still retrying",
			"pay_by", o.view.PayBy, "reason", reason)
		o.setStatus(ctx, flashsale.StatusStalled, reason)
	})
	return cancel
}

// closeUntilDecided runs CloseOrder. When it finds a payment our door
// received by the deadline that never reached this workflow (Temporal could
// not deliver it in time), the order applies that payment instead of
// closing: the buyer paid in time. It returns nil with the order PAID then.
// A payment that could not be applied by its bound stays pending (finish
// settles it) and the order closes regardless of receipts.
func (o *order) closeUntilDecided(ctx workflow.Context, to flashsale.Status, reason flashsale.Code) error {
	in := contract.CloseOrderInput{OrderID: o.in.OrderID, Status: to, Reason: reason}
	for {
		err := o.exec(ctx, "release order in database", contract.CloseOrder, in, nil)
		if codeOf(err) != flashsale.PaymentReceived {
			return err
		}
		var d contract.PaymentReceivedDetails
		if appErr, ok := errors.AsType[*temporal.ApplicationError](err); !ok || !appErr.HasDetails() || appErr.Details(&d) != nil {
			return fmt.Errorf("close order: payment received but not named: %w", err)
		}
		p := Payment{TransactionID: d.TransactionID, Amount: d.Amount, ReceivedAt: d.ReceivedAt}
		if _, done := o.outcomes[p.TransactionID]; done {
			// Answered already, but the database kept no row of it (a
			// refund it refused for good): it must not hold the order.
			in.IgnoreReceipts = true
			continue
		}
		o.logger.Warn("payment received by the deadline reached the order only at close; applying it",
			"transaction_id", p.TransactionID, "received_at", p.ReceivedAt, "pay_by", o.view.PayBy)
		applied, err := o.applyPayment(ctx, p)
		if err != nil {
			return err
		}
		if o.view.Status == flashsale.StatusPaid {
			return nil
		}
		if !applied {
			o.pending = append(o.pending, p)
			in.IgnoreReceipts = true
		}
		// Otherwise it was answered (a refund, a conflict): it has a
		// payments row now and no longer holds the order open.
	}
}

// endAs sets the status compensation ends in. While the order shows
// STALLED the status is only remembered: close sets it once the rest of the
// compensation has completed too.
func (o *order) endAs(ctx workflow.Context, s flashsale.Status, reason flashsale.Code) {
	o.closedAs, o.closedReason = s, reason
	if o.view.Status == flashsale.StatusStalled {
		return
	}
	o.setStatus(ctx, s, reason)
}
