package workflows

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/flashsale/flashsale/activities"
	"github.com/flashsale/flashsale/internal/orderdb"
)

// a names activity methods for ExecuteActivity; its fields are never used
// inside the workflow.
var a *activities.Activities

// OrderWorkflow runs one order from reservation to payment or compensation.
//
//  1. ReserveStock (local activity): Redis pre-deduct, all items or none.
//  2. CreateOrder (local activity): MySQL order + available -> frozen.
//     Both run inside the first workflow task, so the Update-with-Start that
//     started the order is answered after a single task: "reserved, pay by T"
//     or "sold out".
//  3. Wait for a payment (signal or update), a cancel signal, or the pay-by
//     deadline.
//  4. Paid: ConfirmPayment (frozen -> sold). Otherwise compensate: CloseOrder
//     (frozen -> available) then ReleaseStock (Redis buckets).
//
// Payments that arrive after the order closed are recorded for refund.
func OrderWorkflow(ctx workflow.Context, in OrderInput) (OrderView, error) {
	o := &order{}
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
	// pending holds payments not yet handled, in arrival order.
	pending []Payment
	// outcomes remembers every handled transaction, so a repeated payment
	// is answered from here instead of being applied twice.
	outcomes        map[string]PaymentOutcome
	cancelRequested bool
	// closedAs and closedReason are the status compensation ended in,
	// restored after the order showed STALLED.
	closedAs     Status
	closedReason string
	// rev is the order's paymentArrivalChangeID version, read when it
	// starts waiting for money (settleVersion); DefaultVersion before.
	rev workflow.Version
	// fellBack, set while close compensates, is called when a step falls
	// back from the task to a regular activity (settle).
	fellBack func()
}

// ValidateInput checks an order before any stock moves. The starter and the
// HTTP API call it too, so bad input never reaches Temporal.
func ValidateInput(in OrderInput) error {
	var errs []error
	if in.OrderID == "" || len(in.OrderID) > MaxIDLength {
		errs = append(errs, fmt.Errorf("order_id must be 1-%d characters", MaxIDLength))
	}
	if in.UserID == "" || len(in.UserID) > MaxIDLength {
		errs = append(errs, fmt.Errorf("user_id must be 1-%d characters", MaxIDLength))
	}
	if len(in.Items) == 0 || len(in.Items) > MaxItems {
		errs = append(errs, fmt.Errorf("an order needs 1-%d items", MaxItems))
	}
	seen := make(map[string]bool, len(in.Items))
	for _, it := range in.Items {
		if it.SKU == "" || len(it.SKU) > MaxIDLength {
			errs = append(errs, fmt.Errorf("sku_id must be 1-%d characters", MaxIDLength))
		}
		if it.Quantity < 1 || it.Quantity > MaxItemQuantity {
			errs = append(errs, fmt.Errorf("quantity of %q must be 1-%d", it.SKU, MaxItemQuantity))
		}
		if seen[it.SKU] {
			errs = append(errs, fmt.Errorf("sku %q appears twice; merge the lines", it.SKU))
		}
		seen[it.SKU] = true
	}
	if in.PaymentTimeout < 0 {
		errs = append(errs, errors.New("payment_timeout must not be negative"))
	}
	return errors.Join(errs...)
}

// SKUs lists the order's SKU ids, sorted, for the SkuIds search attribute.
func SKUs(items []Item) []string {
	ids := make([]string, len(items))
	for i, it := range items {
		ids[i] = it.SKU
	}
	slices.Sort(ids)
	return ids
}

func (o *order) setup(ctx workflow.Context, in OrderInput) error {
	o.in = in
	o.logger = log.With(workflow.GetLogger(ctx), "order_id", in.OrderID)
	o.outcomes = make(map[string]PaymentOutcome)
	o.view = OrderView{
		OrderID: in.OrderID, UserID: in.UserID, Items: slices.Clone(in.Items),
		Status: StatusReserving, FromOrder: in.FromOrder,
	}

	if err := workflow.SetQueryHandler(ctx, QueryStatus, func() (OrderView, error) {
		return o.view, nil
	}); err != nil {
		return fmt.Errorf("register %s query: %w", QueryStatus, err)
	}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, UpdateReserve, o.handleReserve,
		workflow.UpdateHandlerOptions{Validator: o.validateReserve}); err != nil {
		return fmt.Errorf("register %s update: %w", UpdateReserve, err)
	}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, UpdatePay, o.handlePay,
		workflow.UpdateHandlerOptions{Validator: validatePayment}); err != nil {
		return fmt.Errorf("register %s update: %w", UpdatePay, err)
	}
	// Signals are collected by a workflow coroutine (deterministic, unlike a
	// goroutine) into the same queue the pay update uses, so both forms of
	// payment are handled by one code path in arrival order.
	workflow.Go(ctx, func(ctx workflow.Context) {
		payments := workflow.GetSignalChannel(ctx, SignalPayment)
		cancels := workflow.GetSignalChannel(ctx, SignalCancel)
		for {
			sel := workflow.NewSelector(ctx)
			sel.AddReceive(payments, func(c workflow.ReceiveChannel, _ bool) {
				var p Payment
				c.Receive(ctx, &p)
				if err := validatePayment(ctx, p); err != nil {
					o.logger.Warn("ignoring invalid payment signal", "error", err)
					return
				}
				o.pending = append(o.pending, p)
			})
			sel.AddReceive(cancels, func(c workflow.ReceiveChannel, _ bool) {
				var r CancelRequest
				c.Receive(ctx, &r)
				o.cancelRequested = true
			})
			sel.Select(ctx)
		}
	})
	return nil
}

func validatePayment(_ workflow.Context, p Payment) error {
	if p.TransactionID == "" || len(p.TransactionID) > 128 {
		return errors.New("transaction_id must be 1-128 characters")
	}
	if p.Amount <= 0 {
		return errors.New("amount must be positive")
	}
	return nil
}

// ErrTypeOrderOfAnotherUser is the application error type of the
// validator's refusal of UpdateReserve from a user other than the order's
// buyer (an order id reused by someone else).
const ErrTypeOrderOfAnotherUser = "OrderOfAnotherUser"

// validateReserve refuses a reserve from another user before it is written
// to history.
func (o *order) validateReserve(_ workflow.Context, r ReserveRequest) error {
	if r.UserID != "" && r.UserID != o.in.UserID {
		return temporal.NewNonRetryableApplicationError("order id belongs to another user", ErrTypeOrderOfAnotherUser, nil)
	}
	return nil
}

// handleReserve answers once the reservation step is done. Repeated calls
// (a buyer clicking twice with the same order id) get the same answer.
func (o *order) handleReserve(ctx workflow.Context, _ ReserveRequest) (Reservation, error) {
	if err := workflow.Await(ctx, func() bool { return o.reserved }); err != nil {
		return Reservation{}, err
	}
	return Reservation{
		OrderID: o.view.OrderID, Status: o.reservationStatus(), Amount: o.view.Amount,
		PayBy: o.view.PayBy, Reason: o.reservationReason(),
	}, nil
}

// reservationStatus is what the reservation achieved, independent of what
// happened to the order later: an order that was reserved and then expired
// was still reserved.
func (o *order) reservationStatus() Status {
	if o.view.Status == StatusRejected {
		return StatusRejected
	}
	return StatusPendingPayment
}

func (o *order) reservationReason() string {
	if o.view.Status == StatusRejected {
		return o.view.Reason
	}
	return ""
}

// handlePay queues a payment and waits until the main loop has handled it.
func (o *order) handlePay(ctx workflow.Context, p Payment) (PaymentOutcome, error) {
	if out, ok := o.outcomes[p.TransactionID]; ok {
		out.Duplicate = true
		return out, nil
	}
	o.pending = append(o.pending, p)
	if err := workflow.Await(ctx, func() bool { _, ok := o.outcomes[p.TransactionID]; return ok }); err != nil {
		return PaymentOutcome{}, err
	}
	return o.outcomes[p.TransactionID], nil
}

func (o *order) run(ctx workflow.Context) (OrderView, error) {
	if err := ValidateInput(o.in); err != nil {
		o.reject(ctx, ReasonInvalid, err.Error())
		return o.finish(ctx)
	}
	o.ensureSearchAttributes(ctx)

	if err := o.reserve(ctx); err != nil {
		return OrderView{}, err
	}
	if o.view.Status == StatusRejected {
		return o.finish(ctx)
	}
	if err := o.awaitPayment(ctx); err != nil {
		return OrderView{}, err
	}
	return o.finish(ctx)
}

// reserve takes the stock in Redis, then writes the order in MySQL.
func (o *order) reserve(ctx workflow.Context) error {
	items := o.activityItems()
	lctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		// Redis and MySQL answer in milliseconds; a slow call is a stuck
		// connection, retried quickly. The overall bound keeps a buyer from
		// waiting on an answer for long: past it the order fails and the
		// caller can retry with the same order id.
		StartToCloseTimeout:    5 * time.Second,
		ScheduleToCloseTimeout: 30 * time.Second,
		RetryPolicy:            backoff(50*time.Millisecond, 2*time.Second),
	})

	var reserved activities.ReserveStockResult
	err := workflow.ExecuteLocalActivity(lctx, a.ReserveStock,
		activities.ReserveStockInput{OrderID: o.in.OrderID, Items: items, FromOrder: o.in.FromOrder}).Get(lctx, &reserved)
	if err != nil {
		var appErr *temporal.ApplicationError
		if errors.As(err, &appErr) {
			switch appErr.Type() {
			case activities.ErrTypeSoldOut:
				o.reject(ctx, ReasonSoldOut, appErr.Message())
				return nil
			case activities.ErrTypeUnknownSKU:
				o.reject(ctx, ReasonUnknownSKU, appErr.Message())
				return nil
			case activities.ErrTypeInvalid:
				return o.abort(ctx, false, ReasonInvalid)
			}
		}
		// Redis stayed unreachable past the retry budget. Some items may
		// have been taken before it failed; give them back (the release
		// is idempotent and retried until Redis answers) and reject.
		o.logger.Error("reserve stock failed", "error", err)
		return o.abort(ctx, false, ReasonUnavailable)
	}
	if reserved.Degraded {
		o.logger.Warn("reserving in mysql alone", "why", reserved.DegradedReason)
		o.view.Degraded = true
	}

	// pay_by is fixed by the activity when the row is written and stored
	// with it; the query and the timer use that stored value, so a retried
	// activity cannot move the deadline.
	var created activities.CreateOrderResult
	err = workflow.ExecuteLocalActivity(lctx, a.CreateOrder, activities.CreateOrderInput{
		OrderID: o.in.OrderID, UserID: o.in.UserID, Items: items, PaymentTimeout: o.in.PaymentTimeout,
		Degraded: o.view.Degraded,
	}).Get(lctx, &created)
	if err != nil {
		var appErr *temporal.ApplicationError
		if errors.As(err, &appErr) {
			switch appErr.Type() {
			case activities.ErrTypeSoldOut:
				// Only a degraded order: MySQL alone said no.
				return o.rejectDegraded(ctx, ReasonSoldOut, appErr.Message())
			case activities.ErrTypeStockDrift, activities.ErrTypeUnknownSKU, activities.ErrTypeLimitExceeded:
				if o.view.Degraded {
					reason := ReasonUnknownSKU
					if appErr.Type() == activities.ErrTypeLimitExceeded {
						reason = ReasonLimitExceeded
					}
					return o.rejectDegraded(ctx, reason, appErr.Message())
				}
				return o.rejectRefused(ctx, appErr)
			}
		}
		// MySQL stayed unreachable; the last attempt may or may not have
		// committed. Close the order in the database if it exists, then
		// give the Redis units back.
		o.logger.Error("create order failed", "error", err)
		return o.abort(ctx, true, ReasonUnavailable)
	}
	o.view.Amount = created.Amount
	o.view.PayBy = created.PayBy
	o.setStatus(ctx, StatusPendingPayment, "")
	o.reserved = true
	return nil
}

// rejectRefused rejects an order MySQL refused. Units of SKUs that drifted
// (Redis had them, MySQL did not) stay out of Redis, which shrinks Redis
// toward the truth; units of the other items are real and go back. A
// per-user limit refusal drifted nothing: every unit goes back.
func (o *order) rejectRefused(ctx workflow.Context, appErr *temporal.ApplicationError) error {
	reason := ReasonUnknownSKU
	var drifted []string
	switch appErr.Type() {
	case activities.ErrTypeLimitExceeded:
		reason = ReasonLimitExceeded
	case activities.ErrTypeStockDrift:
		reason = ReasonStockDrift
		var d activities.StockDriftDetails
		if appErr.HasDetails() {
			if err := appErr.Details(&d); err != nil {
				return fmt.Errorf("decode drift details: %w", err)
			}
		}
		drifted = d.DriftedSKUs
	}
	var back []activities.Item
	for _, it := range o.activityItems() {
		if !slices.Contains(drifted, it.SKU) {
			back = append(back, it)
		}
	}
	if len(back) > 0 {
		if err := o.releaseRedis(ctx, back); err != nil {
			return err
		}
	}
	o.reject(ctx, reason, appErr.Message())
	return nil
}

// rejectDegraded rejects an order reserved in MySQL alone. The buyer is
// answered first: the Redis release that follows waits for Redis to come
// back. It is still needed, because an earlier ReserveStock attempt may
// have taken units before Redis went away (its reply lost), and its
// tombstones keep an abandoned attempt from taking any later.
func (o *order) rejectDegraded(ctx workflow.Context, reason, detail string) error {
	o.reject(ctx, reason, detail)
	return o.releaseRedis(ctx, o.activityItems())
}

// abort undoes a reservation that could not complete and rejects the order
// with reason, so no unit stays taken by an order nobody can pay.
func (o *order) abort(ctx workflow.Context, orderMayExist bool, reason string) error {
	if orderMayExist {
		err := workflow.ExecuteActivity(o.activityOptions(ctx, "release order in database"), a.CloseOrder,
			activities.CloseOrderInput{OrderID: o.in.OrderID, Status: orderdb.StatusCancelled, Reason: reason, Abandon: true}).Get(ctx, nil)
		if err != nil {
			return fmt.Errorf("close order after failed create: %w", err)
		}
	}
	if o.view.Degraded {
		return o.rejectDegraded(ctx, reason, "reservation undone")
	}
	if err := o.releaseRedis(ctx, o.activityItems()); err != nil {
		return err
	}
	o.reject(ctx, reason, "reservation undone")
	return nil
}

// awaitPayment waits for money, a cancel or the deadline, whichever comes
// first, then settles the order.
func (o *order) awaitPayment(ctx workflow.Context) error {
	closeAt := o.view.PayBy
	byArrival := o.settleVersion(ctx) >= judgedByArrival
	if byArrival {
		closeAt = closeAt.Add(arrivalGrace)
	}
	for {
		remaining := closeAt.Sub(workflow.Now(ctx))
		ok := false
		var err error
		if remaining > 0 {
			ok, err = workflow.AwaitWithOptions(ctx, workflow.AwaitOptions{
				Timeout:      remaining,
				TimerOptions: workflow.TimerOptions{Summary: "payment deadline"},
			}, func() bool { return len(o.pending) > 0 || o.cancelRequested })
		}
		if temporal.IsCanceledError(err) {
			// An operator cancelled the workflow: treat it as a cancel, on
			// a disconnected context so the compensation still runs.
			dctx, _ := workflow.NewDisconnectedContext(ctx)
			return o.close(dctx, StatusCancelled, "workflow cancelled by operator")
		}
		if err != nil {
			return fmt.Errorf("await payment: %w", err)
		}
		switch {
		case len(o.pending) > 0:
			if byArrival {
				p := o.pending[0]
				if _, done := o.outcomes[p.TransactionID]; done {
					// The same payment twice: the API's pay update and
					// the signal it falls back to when the update is
					// slow. The first was applied; nobody waits on this.
					o.pending = o.pending[1:]
					continue
				}
				if o.arrivedLate(ctx, p) {
					// Money after the deadline: the order is over. It
					// closes now rather than at closeAt, and finish()
					// records the payment for refund.
					o.logger.Info("payment received after the deadline", "transaction_id", p.TransactionID,
						"received_at", p.ReceivedAt, "pay_by", o.view.PayBy)
					return o.closeUnpaid(ctx)
				}
			}
			if o.bounded(ctx) && !o.takesPayments(ctx) {
				// Payments kept the order open past pay_by until its
				// bound: no new one starts. Close; finish() settles the
				// rest late.
				return o.closeUnpaid(ctx)
			}
			// Money first: a payment that arrived together with a cancel
			// or the deadline wins, because the buyer has paid.
			p := o.pending[0]
			o.pending = o.pending[1:]
			applied, err := o.applyPayment(ctx, p)
			if err != nil {
				return err
			}
			if o.view.Status == StatusPaid {
				return nil
			}
			if !applied {
				// The database did not answer by the payment's bound.
				// The payment stays pending; CloseOrder's compare-and-set
				// under the order lock decides whether it landed after
				// all (the order is PAID) or not (finish() records it for
				// refund).
				o.pending = slices.Insert(o.pending, 0, p)
				if ctx.Err() != nil {
					dctx, _ := workflow.NewDisconnectedContext(ctx)
					return o.close(dctx, StatusCancelled, "workflow cancelled by operator")
				}
				return o.closeUnpaid(ctx)
			}
		case o.cancelRequested:
			return o.close(ctx, StatusCancelled, ReasonBuyerCancelled)
		case !ok:
			return o.close(ctx, StatusExpired, ReasonPaymentTimeout)
		}
	}
}

// closeUnpaid closes an order whose deadline has passed without payment:
// cancelled if the buyer asked meanwhile, expired otherwise.
func (o *order) closeUnpaid(ctx workflow.Context) error {
	if o.cancelRequested {
		return o.close(ctx, StatusCancelled, ReasonBuyerCancelled)
	}
	return o.close(ctx, StatusExpired, ReasonPaymentTimeout)
}

// exec runs a compensation step that must eventually happen: inside the
// workflow task when the order settles there (settle), otherwise, or when
// that got no answer, as an activity retried without limit.
func (o *order) exec(ctx workflow.Context, summary string, activity, in, out any) error {
	return o.settle(ctx, summary, activity, in, out, func(ctx workflow.Context) error {
		return workflow.ExecuteActivity(o.activityOptions(ctx, summary), activity, in).Get(ctx, out)
	})
}

func (o *order) activityOptions(ctx workflow.Context, summary string) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		// Settlement must eventually happen, however long a dependency is
		// down: no attempt limit, backoff capped at a minute.
		StartToCloseTimeout: 10 * time.Second,
		RetryPolicy:         backoff(200*time.Millisecond, time.Minute),
		Summary:             summary,
	})
}

// backoff is the retry policy of every activity here: exponential from
// initial, capped at maxInterval, and never retrying the activities' business
// rejections. Each caller picks the intervals for its activity.
func backoff(initial, maxInterval time.Duration) *temporal.RetryPolicy {
	return &temporal.RetryPolicy{
		InitialInterval:        initial,
		BackoffCoefficient:     2,
		MaximumInterval:        maxInterval,
		NonRetryableErrorTypes: activities.NonRetryableErrorTypes,
	}
}

// close compensates an unpaid order (compensate). Its activities never give
// up, because the units must come back; on a bounded order a watch shows the
// order STALLED while compensation runs past its bound (watchStall), and the
// final status is set once it completes.
func (o *order) close(ctx workflow.Context, to Status, reason string) error {
	if !o.bounded(ctx) {
		return o.compensate(ctx, to, reason)
	}
	var stopWatch func()
	began := workflow.Now(ctx)
	if o.rev >= settleInTask {
		// Compensation settling inside this task needs no watch: the
		// watch starts only if a step falls back to an activity
		// (settle), which keeps a timer out of every normal history.
		o.fellBack = func() {
			if stopWatch == nil {
				stopWatch = o.watchStall(ctx, reason, began)
			}
		}
		defer func() { o.fellBack = nil }()
	} else {
		stopWatch = o.watchStall(ctx, reason, began)
	}
	err := o.compensate(ctx, to, reason)
	if stopWatch != nil {
		stopWatch()
	}
	if err == nil && o.view.Status == StatusStalled {
		o.logger.Info("compensation completed after a stall", "status", o.closedAs)
		o.setStatus(ctx, o.closedAs, o.closedReason)
	}
	return err
}

// watchStall marks the order STALLED, logged at ERROR, if compensation is
// still running stallAfter past pay_by (or past began, when compensation
// began later, e.g. a cancel). The returned stop ends the watch.
func (o *order) watchStall(ctx workflow.Context, reason string, began time.Time) (stop func()) {
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
		o.setStatus(ctx, StatusStalled, reason)
	})
	return cancel
}

// compensate undoes an unpaid order: the database first (CAS from
// PENDING_PAYMENT, frozen -> available), then Redis. In that order, Redis
// never offers a unit that MySQL still holds frozen. The Redis units go to
// the first buyer on the SKU's waitlist if there is one (offerToWaitlist),
// otherwise back on open sale.
//
// If the CAS finds the order PAID, a ConfirmPayment the workflow had
// stopped waiting for (applyPayment's bound) committed after all: the order
// is paid, its units are sold, nothing goes back.
func (o *order) compensate(ctx workflow.Context, to Status, reason string) error {
	err := o.closeInDatabase(ctx, to, reason)
	if err == nil && o.view.Status == StatusPaid {
		return nil // a payment received in time was found and applied
	}
	if businessType(err) == activities.ErrTypeOrderPaid {
		o.logger.Warn("order paid by a payment that committed late; not closing it", "wanted", to)
		o.settleAs(ctx, StatusPaid, "")
		return nil
	}
	if err != nil {
		return fmt.Errorf("close order as %s: %w", to, err)
	}
	o.settleAs(ctx, to, reason)
	if o.view.Degraded {
		// Its units came back to MySQL only, never having left Redis's
		// buckets; the resync CloseOrder asked for puts them on sale.
		// The release only returns what an earlier attempt may have taken.
		return o.releaseRedis(ctx, o.activityItems())
	}
	offered, err := o.offerToWaitlist(ctx)
	if err != nil {
		return err
	}
	if offered {
		return nil
	}
	return o.releaseRedis(ctx, o.activityItems())
}

// closeInDatabase runs CloseOrder. When it finds a payment our door
// received by the deadline that never reached this workflow (Temporal could
// not deliver it in time), the order applies that payment instead of
// closing: the buyer paid in time. It returns nil with the order PAID then.
// A payment that could not be applied by its bound stays pending (finish
// settles it) and the order closes regardless of receipts.
func (o *order) closeInDatabase(ctx workflow.Context, to Status, reason string) error {
	in := activities.CloseOrderInput{OrderID: o.in.OrderID, Status: orderdb.Status(to), Reason: reason}
	for {
		err := o.exec(ctx, "release order in database", a.CloseOrder, in, nil)
		if businessType(err) != activities.ErrTypePaymentReceived {
			return err
		}
		var d activities.PaymentReceivedDetails
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
		if o.view.Status == StatusPaid {
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

// settleAs sets the status compensation ends in. While the order shows
// STALLED the status is only remembered: close sets it once the rest of the
// compensation has completed too.
func (o *order) settleAs(ctx workflow.Context, s Status, reason string) {
	o.closedAs, o.closedReason = s, reason
	if o.view.Status == StatusStalled {
		return
	}
	o.setStatus(ctx, s, reason)
}

func (o *order) releaseRedis(ctx workflow.Context, items []activities.Item) error {
	err := o.exec(ctx, "put units back on sale", a.ReleaseStock,
		activities.ReleaseStockInput{OrderID: o.in.OrderID, Items: items, FromOrder: o.in.FromOrder}, nil)
	if err != nil {
		return fmt.Errorf("release redis stock: %w", err)
	}
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
			if err := o.settleLate(ctx, p); err != nil {
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

func (o *order) reject(ctx workflow.Context, reason, detail string) {
	o.logger.Info("order rejected", "reason", reason, "detail", detail)
	o.setStatus(ctx, StatusRejected, reason)
	o.reserved = true
}

// setStatus changes the status and keeps the OrderStatus search attribute
// current, so the Web UI filters by the real state.
func (o *order) setStatus(ctx workflow.Context, s Status, reason string) {
	o.view.Status = s
	o.view.Reason = reason
	if err := workflow.UpsertTypedSearchAttributes(ctx, OrderStatusKey.ValueSet(string(s))); err != nil {
		o.logger.Warn("upsert OrderStatus search attribute", "error", err)
	}
	o.logger.Info("order status", "status", s, "reason", reason)
}

// ensureSearchAttributes fills UserId and SkuIds when the starter did not
// (e.g. an order started from the Web UI). Starters normally set them on
// start, which costs no extra event.
func (o *order) ensureSearchAttributes(ctx workflow.Context) {
	sa := workflow.GetTypedSearchAttributes(ctx)
	var updates []temporal.SearchAttributeUpdate
	if _, ok := sa.GetKeyword(UserIDKey); !ok {
		updates = append(updates, UserIDKey.ValueSet(o.in.UserID))
	}
	if _, ok := sa.GetKeywordList(SKUIDsKey); !ok {
		updates = append(updates, SKUIDsKey.ValueSet(SKUs(o.in.Items)))
	}
	if _, ok := sa.GetKeyword(OrderStatusKey); !ok {
		updates = append(updates, OrderStatusKey.ValueSet(string(StatusReserving)))
	}
	if len(updates) == 0 {
		return
	}
	if err := workflow.UpsertTypedSearchAttributes(ctx, updates...); err != nil {
		o.logger.Warn("upsert search attributes", "error", err)
	}
}

func (o *order) activityItems() []activities.Item {
	items := make([]activities.Item, len(o.in.Items))
	for i, it := range o.in.Items {
		items[i] = activities.Item{SKU: it.SKU, Quantity: it.Quantity}
	}
	return items
}
