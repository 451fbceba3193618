package workflows

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/activities/contract"
)

// OrderWorkflow runs one order from reservation to payment or compensation.
//
//  1. ReserveStock (local activity): Redis pre-deduct, all items or none.
//  2. CreateOrder (local activity): MySQL order + available -> frozen.
//     Both run inside the first workflow task, so the Update-with-Start that
//     started the order is answered after a single task: "reserved, pay by T"
//     or "sold out".
//  3. Wait for a payment (signal or update), a cancel signal, or the pay-by
//     deadline (deadline.go).
//  4. Paid: ConfirmPayment (frozen -> sold; payment.go). Otherwise
//     compensate (compensate.go): each step above pushed its undo, and they
//     run last first: CloseOrder (frozen -> available), then the Redis units
//     go to a waiting buyer or back on sale.
//
// Payments that arrive after the order closed are recorded for refund.
//
// Started with OrderStatus PENDING_PAYMENT (OrderSearchAttributes), it
// writes that status no second time: a paid order's history has one
// search-attribute upsert (PAID). How a change to it is shipped once orders
// run in production is docs/versioning.md.
func OrderWorkflow(ctx workflow.Context, in OrderInput) (OrderView, error) {
	return (&order{}).start(ctx, in)
}

func (o *order) start(ctx workflow.Context, in OrderInput) (OrderView, error) {
	if err := o.setup(ctx, in); err != nil {
		return OrderView{}, err
	}
	return o.run(ctx)
}

type order struct {
	in     OrderInput
	logger log.Logger
	view   OrderView

	// reserved is set once the reservation step has an answer; the
	// UpdateReserve handler waits for it.
	reserved bool
	// undo lists what gives back what the order took, pushed right after
	// each step (compensate.go).
	undo []undoStep
	// drifted are SKUs whose units MySQL refused as drift: their Redis
	// units stay out of Redis (see activities.CreateOrder).
	drifted []string
	// pending holds payments not yet handled, in arrival order.
	pending []Payment
	// outcomes remembers every handled transaction, so a repeated payment
	// is answered from here instead of being applied twice.
	outcomes        map[string]PaymentOutcome
	cancelRequested bool
	// closedAs and closedReason are the status compensation ended in,
	// restored after the order showed STALLED.
	closedAs     flashsale.Status
	closedReason flashsale.Code
	// lateCapture, releaseOnFailed: the order's rules from its SKUs'
	// terms (terms.go). paymentFailed: a FAILED payment was reported.
	lateCapture, releaseOnFailed, paymentFailed bool
	// extended: the one extension of the hold was asked for; extending:
	// it is being written; deadlineMoved: pay_by moved, the wait for
	// money starts again on the new one.
	extended, extending, deadlineMoved bool
	// deferred: the order booked a SKU that deducts at payment and takes
	// its units when paid (deduct.go); noUnit: its payment found none.
	deferred, noUnit bool
	// fellBack, set while compensation runs, is called when a step falls
	// back from the task to a regular activity (inTaskFirst).
	fellBack func()
}

func (o *order) setup(ctx workflow.Context, in OrderInput) error {
	o.in = in
	o.logger = log.With(workflow.GetLogger(ctx), "order_id", in.OrderID)
	o.outcomes = make(map[string]PaymentOutcome)
	o.view = OrderView{
		OrderSummary: OrderSummary{OrderID: in.OrderID, UserID: in.UserID, Items: slices.Clone(in.Items),
			Status: flashsale.StatusReserving},
		FromOrder: in.FromOrder,
	}
	return o.registerHandlers(ctx)
}

// run is the order's happy path: validate, reserve, wait for the money.
// Every other way out is a compensation that the step which met it starts.
func (o *order) run(ctx workflow.Context) (OrderView, error) {
	if err := o.validate(ctx); err != nil {
		if err := o.compensate(ctx, rejection(flashsale.Invalid, err)); err != nil {
			return OrderView{}, err
		}
		return o.finish(ctx)
	}
	o.ensureSearchAttributes(ctx)

	if err := o.reserve(ctx); err != nil {
		return OrderView{}, err
	}
	if o.view.Status == flashsale.StatusRejected {
		return o.finish(ctx)
	}
	if err := o.awaitPayment(ctx); err != nil {
		return OrderView{}, err
	}
	return o.finish(ctx)
}

// reserve takes the stock in Redis, then writes the order in MySQL. A
// refusal or a failure on the way is compensated here, and leaves the order
// REJECTED.
func (o *order) reserve(ctx workflow.Context) error {
	lctx := reserveOptions(ctx)
	var reserved contract.ReserveStockResult
	err := workflow.ExecuteLocalActivity(lctx, contract.ReserveStock,
		contract.ReserveStockInput{OrderID: o.in.OrderID, Items: o.in.Items, FromOrder: o.in.FromOrder, UserID: o.in.UserID,
			Deduct: o.in.Deduct}).Get(lctx, &reserved)
	if code := codeOf(err); code == flashsale.SoldOut || code == flashsale.UnknownSKU || code == flashsale.LimitExceeded {
		// Refused whole: ReserveStock gave back what it had taken before
		// answering, so there is nothing to undo. LimitExceeded is new
		// here (recorded histories never carry it from ReserveStock), so
		// no version branch is needed.
		return o.compensate(ctx, rejection(code, err))
	}
	if reserved.Deferred {
		return o.book(ctx, lctx)
	}
	// From here the order may hold Redis units, even if ReserveStock
	// failed: an attempt may have taken items before Redis went away.
	o.pushUndo(undoRedis, o.giveBackUnits)
	if err != nil {
		// Input that can never succeed (INVALID_REQUEST), or Redis stayed
		// unreachable past the retry budget (UNAVAILABLE).
		code := codeOf(err)
		if code != flashsale.Invalid {
			o.logger.Error("reserve stock failed", "error", err)
			code = flashsale.Unavailable
		}
		return o.compensate(ctx, outcome{status: flashsale.StatusRejected, reason: code, detail: "reservation undone"})
	}
	if reserved.Degraded {
		o.logger.Warn("reserving in mysql alone", "why", reserved.DegradedReason)
		o.view.Degraded = true
	}

	// pay_by is fixed by the activity when the row is written and stored
	// with it; the query and the timer use that stored value, so a retried
	// activity cannot move the deadline.
	var created contract.CreateOrderResult
	// Buckets is no part of the history (a local activity's marker records
	// its result, not its input), so every order passes it. FromOrder is
	// not: the database keeps no origin (CreateOrderInput).
	err = workflow.ExecuteLocalActivity(lctx, contract.CreateOrder, contract.CreateOrderInput{
		Order:          flashsale.Order{OrderID: o.in.OrderID, UserID: o.in.UserID, Items: o.in.Items},
		PaymentTimeout: o.in.PaymentTimeout, Degraded: o.view.Degraded, Buckets: contract.BucketsOf(reserved),
	}).Get(lctx, &created)
	switch code := codeOf(err); code {
	case "":
	case flashsale.SoldOut, flashsale.UnknownSKU, flashsale.LimitExceeded, flashsale.StockDrift, flashsale.OrderIDConflict:
		// MySQL said no and wrote nothing. SoldOut comes from a degraded
		// order only (MySQL alone decided); OrderIDConflict from an id that
		// another buyer's order, or other lines, hold. Units of SKUs that drifted
		// (Redis had them, MySQL did not) stay out of Redis, which shrinks
		// Redis toward the truth; the other units are real and go back.
		if code == flashsale.StockDrift {
			if err := o.keepDriftOutOfRedis(err); err != nil {
				return err
			}
		}
		return o.compensate(ctx, rejection(code, err))
	default:
		// MySQL stayed unreachable, or refused the statement for good; the
		// last attempt may or may not have committed. Abandon the order in
		// the database if it exists, then give the Redis units back.
		o.logger.Error("create order failed", "error", err)
		o.pushUndo(undoDatabase, o.abandonInDatabase)
		return o.compensate(ctx, outcome{status: flashsale.StatusRejected, reason: flashsale.Unavailable, detail: "reservation undone"})
	}
	return o.opened(ctx, created)
}

// opened notes the written order: its undo, its price, deadline and rules.
func (o *order) opened(ctx workflow.Context, created contract.CreateOrderResult) error {
	o.pushUndo(undoDatabase, o.closeInDatabase)
	o.view.Amount = created.Amount
	o.view.PayBy = created.PayBy
	o.termsOf(created)
	o.setStatus(ctx, flashsale.StatusPendingPayment, "")
	o.reserved = true
	return nil
}

// keepDriftOutOfRedis notes the SKUs a StockDrift refusal names, so the
// Redis undo leaves their units out.
func (o *order) keepDriftOutOfRedis(err error) error {
	var d contract.StockDriftDetails
	if appErr, ok := errors.AsType[*temporal.ApplicationError](err); ok && appErr.HasDetails() {
		if derr := appErr.Details(&d); derr != nil {
			return fmt.Errorf("decode drift details: %w", derr)
		}
	}
	o.drifted = d.DriftedSKUs
	return nil
}

// finish handles payments that arrived too late, then returns the view.
// Updates still running are waited for so none is left without an answer.
func (o *order) finish(ctx workflow.Context) (OrderView, error) {
	// A cancelled context cannot run the refund activities.
	ctx, _ = workflow.NewDisconnectedContext(ctx)
	for {
		for len(o.pending) > 0 {
			p := o.pending[0]
			o.pending = o.pending[1:]
			if err := o.answerLatePayment(ctx, p); err != nil {
				return OrderView{}, err
			}
		}
		if err := workflow.Await(ctx, func() bool {
			return len(o.pending) > 0 || workflow.AllHandlersFinished(ctx)
		}); err != nil {
			return OrderView{}, err
		}
		if len(o.pending) == 0 {
			return o.view, nil
		}
	}
}

// setStatus changes the status and keeps the OrderStatus search attribute
// current, so the Web UI filters by the real state. Each upsert is an event
// and a visibility write: one that would write the value already there (the
// PENDING_PAYMENT the order was started with) is skipped.
func (o *order) setStatus(ctx workflow.Context, s flashsale.Status, reason flashsale.Code) {
	o.view.Status = s
	o.view.Reason = reason
	o.logger.Info("order status", "status", s, "reason", reason)
	// What the Web UI shows as the order's current details. Not a command
	// and not in the history, so it needs no patch (docs/versioning.md).
	workflow.SetCurrentDetails(ctx, o.details())
	if shown, ok := workflow.GetTypedSearchAttributes(ctx).GetKeyword(OrderStatusKey); ok && shown == string(s) {
		return
	}
	if err := workflow.UpsertTypedSearchAttributes(ctx, OrderStatusKey.ValueSet(string(s))); err != nil {
		o.logger.Warn("upsert OrderStatus search attribute", "error", err)
	}
}

// ensureSearchAttributes fills SkuIds when the starter did not (e.g. an
// order started from the Web UI). Starters normally set them on start,
// which costs no extra event. UserId is the starter's alone: it is a keyed
// hash of the buyer's id (OrderSearchAttributes), and the workflow holds
// no key; an order started without it has none rather than a raw id.
func (o *order) ensureSearchAttributes(ctx workflow.Context) {
	sa := workflow.GetTypedSearchAttributes(ctx)
	var updates []temporal.SearchAttributeUpdate
	if _, ok := sa.GetKeywordList(SKUIDsKey); !ok {
		updates = append(updates, SKUIDsKey.ValueSet(sortedSKUs(o.in.Order())))
	}
	if _, ok := sa.GetKeyword(OrderStatusKey); !ok {
		updates = append(updates, OrderStatusKey.ValueSet(string(flashsale.StatusReserving)))
	}
	if len(updates) == 0 {
		return
	}
	if err := workflow.UpsertTypedSearchAttributes(ctx, updates...); err != nil {
		o.logger.Warn("upsert search attributes", "error", err)
	}
}

// sortedSKUs is the order's SKU ids as the SkuIds search attribute holds
// them: sorted, so the same order reads the same from every starter.
func sortedSKUs(o flashsale.Order) []string {
	ids := o.SKUs()
	slices.Sort(ids)
	return ids
}

// details is the order's current state in words, for the Web UI's
// "Current Details": its status, why, and until when it can be paid.
func (o *order) details() string {
	d := "order " + string(o.view.Status)
	if o.view.Reason != "" {
		d += " (" + string(o.view.Reason) + ")"
	}
	if o.view.Status == flashsale.StatusPendingPayment && !o.view.PayBy.IsZero() {
		d += ", pay by " + o.view.PayBy.UTC().Format(time.RFC3339)
	}
	return d
}
