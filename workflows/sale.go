package workflows

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/activities/contract"
)

// SaleWorkflow is a fair sale's decisions (docs/design/fair-sale.md): it
// creates the sale with its seed's commitment, opens it at OpensAt on its
// own timer (or at an operator's open Update), and carries the operators'
// pause, resume and close. Each decision is written to Redis by an
// activity before the Update answers, so every API instance acts on it at
// its next request; buyers never wait on this workflow. Its history is the
// sale's audit trail.
func SaleWorkflow(ctx workflow.Context, in SaleInput) (SaleView, error) {
	s, err := newSaleRun(ctx, in)
	if err != nil {
		return SaleView{}, err
	}
	return s.run(ctx)
}

type saleRun struct {
	in     SaleInput
	view   SaleView
	logger log.Logger
	// mu orders the steps that write the sale's state (the open, every
	// Update, the end), so each reads the state the previous one left.
	mu        workflow.Mutex
	openAsked bool
	// since is when the sale started (the workflow's start, or the
	// input's Since for a SKU sold without a queue): the sale's orders are
	// its SKU's orders created since.
	since time.Time
	// ends: the sale runs the code that gave it an end (saleEndChange):
	// closes_at and its Update, the close of a SKU sold without a queue.
	ends bool
	// checks: the sale runs the go/no-go before its open
	// (salePreflightChange).
	checks bool
}

// saleStepOptions: Redis writes of one slot, idempotent; retried until
// Redis answers (a sale must not lose a decision to an outage).
var saleStepOptions = workflow.ActivityOptions{
	StartToCloseTimeout: 10 * time.Second,
	RetryPolicy: &temporal.RetryPolicy{
		InitialInterval:        200 * time.Millisecond,
		MaximumInterval:        5 * time.Second,
		NonRetryableErrorTypes: contract.NonRetryableErrorTypes,
	},
}

// openStepOptions: the open ranks every entrant, a chunk at a time,
// heartbeating (a million take seconds, more than saleStepOptions' bound);
// a worker lost mid-way is seen within the heartbeat timeout and the retry
// resumes from the ranks written.
var openStepOptions = workflow.ActivityOptions{
	StartToCloseTimeout: 10 * time.Minute,
	HeartbeatTimeout:    20 * time.Second,
	RetryPolicy:         saleStepOptions.RetryPolicy,
}

func newSaleRun(ctx workflow.Context, in SaleInput) (*saleRun, error) {
	if !flashsale.ValidID(in.SKU, flashsale.MaxIDLength) || in.OpensAt.IsZero() || in.PassTTL < 0 || in.MaxEntrants < 0 ||
		(!in.ClosesAt.IsZero() && !in.ClosesAt.After(in.OpensAt)) {
		return nil, temporal.NewNonRetryableApplicationError("invalid sale input", contract.TypeFor(flashsale.Invalid), nil)
	}
	if in.PassTTL == 0 {
		in.PassTTL = DefaultPassTTL
	}
	s := &saleRun{
		in:     in,
		view:   SaleView{SKU: in.SKU, State: flashsale.SaleStatePrequeue, OpensAt: in.OpensAt},
		logger: log.With(workflow.GetLogger(ctx), "sku_id", in.SKU),
		mu:     workflow.NewMutex(ctx),
		since:  workflow.GetInfo(ctx).WorkflowStartTime,
	}
	if !in.Since.IsZero() {
		s.since = in.Since
	}
	s.ends = workflow.GetVersion(ctx, saleEndChange, workflow.DefaultVersion, 1) >= 1
	if s.ends {
		s.view.ClosesAt, s.view.Unqueued = in.ClosesAt, in.Unqueued
	}
	s.checks = workflow.GetVersion(ctx, salePreflightChange, workflow.DefaultVersion, 1) >= 1
	if err := workflow.SetQueryHandler(ctx, QuerySale, func() (SaleView, error) { return s.view, nil }); err != nil {
		return nil, fmt.Errorf("register %s query: %w", QuerySale, err)
	}
	// A slice, not a map: registration order is fixed (workflowcheck).
	for _, u := range []struct {
		name      string
		handler   func(workflow.Context, SaleControl) (SaleView, error)
		validator func(workflow.Context, SaleControl) error
	}{
		{UpdateSaleOpen, s.open, s.allowed(flashsale.SaleStatePrequeue)},
		{UpdateSalePause, s.move(flashsale.SaleStatePaused, flashsale.SaleStateOpen), s.allowed(flashsale.SaleStateOpen)},
		{UpdateSaleResume, s.move(flashsale.SaleStateOpen, flashsale.SaleStatePaused), s.allowed(flashsale.SaleStatePaused)},
		{UpdateSaleClose, s.move(flashsale.SaleStateClosed, flashsale.SaleStatePrequeue, flashsale.SaleStateOpen, flashsale.SaleStatePaused),
			s.allowed(flashsale.SaleStatePrequeue, flashsale.SaleStateOpen, flashsale.SaleStatePaused)},
		{UpdateSaleVoid, s.void, s.voidAllowed},
	} {
		if err := workflow.SetUpdateHandlerWithOptions(ctx, u.name, u.handler,
			workflow.UpdateHandlerOptions{Validator: u.validator}); err != nil {
			return nil, fmt.Errorf("register %s update: %w", u.name, err)
		}
	}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, UpdateSaleClosesAt, s.moveEnd,
		workflow.UpdateHandlerOptions{Validator: s.endAllowed}); err != nil {
		return nil, fmt.Errorf("register %s update: %w", UpdateSaleClosesAt, err)
	}
	return s, nil
}

// run is the sale's life: prepare, wait for the open, open, wait for the
// close.
func (s *saleRun) run(ctx workflow.Context) (SaleView, error) {
	actx := workflow.WithActivityOptions(ctx, saleStepOptions)
	var prepared contract.PreparedSale
	if err := workflow.ExecuteActivity(actx, contract.PrepareSale, contract.PrepareSaleInput{
		SaleTerms: s.in, SaleID: workflow.GetInfo(ctx).WorkflowExecution.RunID,
	}).Get(ctx, &prepared); err != nil {
		return s.view, fmt.Errorf("prepare sale: %w", err)
	}
	s.view.SeedHash = prepared.SeedHash

	if s.ends && s.in.Unqueued {
		// A SKU sold without a queue: no queue opens, its selling closes.
		if err := s.closeNow(ctx, "sku close", time.Time{}); err != nil {
			return s.view, err
		}
	}
	// The opening time is this timer's, by the server's clock: no API
	// instance's clock decides it.
	if wait := s.in.OpensAt.Sub(workflow.Now(ctx)); wait > 0 && !(s.ends && s.in.Unqueued) {
		if _, err := workflow.AwaitWithTimeout(ctx, wait, func() bool { return s.openAsked || s.view.State == flashsale.SaleStateClosed }); err != nil {
			return s.view, err
		}
	}
	if err := s.openNow(ctx); err != nil {
		return s.view, err
	}
	if s.ends {
		if err := s.untilEnd(ctx); err != nil {
			return s.view, err
		}
	}
	if err := workflow.Await(ctx, func() bool { return s.view.State == flashsale.SaleStateClosed }); err != nil {
		return s.view, err
	}
	// An Update still answering finishes before the result is written.
	if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
		return s.view, err
	}
	if err := s.end(ctx); err != nil {
		return s.view, err
	}
	if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
		return s.view, err
	}
	return s.view, nil
}

// The end of a closed sale: its options, one per step's nature.
var (
	// settleOptions: waiting for the last orders may take as long as an
	// unpaid order has to pay; the wait heartbeats, so a lost worker is
	// seen in seconds and another looks again.
	settleOptions = workflow.ActivityOptions{
		StartToCloseTimeout: time.Hour,
		HeartbeatTimeout:    30 * time.Second,
		RetryPolicy:         saleStepOptions.RetryPolicy,
	}
	// agreeOptions: the comparison fails while MySQL and Redis disagree,
	// and is retried, at most every 30 s, until they agree (a drift is
	// repaired by reconciliation, not here).
	agreeOptions = workflow.ActivityOptions{
		StartToCloseTimeout: time.Minute,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:        time.Second,
			MaximumInterval:        30 * time.Second,
			NonRetryableErrorTypes: contract.NonRetryableErrorTypes,
		},
	}
	// readOptions: the report's reads of a large sale's rows.
	readOptions = workflow.ActivityOptions{
		StartToCloseTimeout: time.Minute,
		RetryPolicy:         saleStepOptions.RetryPolicy,
	}
	// removeOptions: removing the keys scans the keyspace and heartbeats
	// every batch; a killed worker's attempt is retried within seconds and
	// removes what is left.
	removeOptions = workflow.ActivityOptions{
		StartToCloseTimeout: 10 * time.Minute,
		HeartbeatTimeout:    20 * time.Second,
		RetryPolicy:         saleStepOptions.RetryPolicy,
	}
)

// end ends a closed sale: once its last order has settled
// (none unpaid, no compensation running) it checks that MySQL and Redis
// agree, records the final report (from history from then on: a retry or a
// replay never reads it again from keys half removed), marks the sale ended
// in MySQL and removes its Redis keys. A void is still accepted while the
// orders settle, not once the end has begun.
func (s *saleRun) end(ctx workflow.Context) error {
	req := contract.SaleRequest{SKU: s.in.SKU}
	s.view.Settling = true
	var settled contract.SaleSettled
	if err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, settleOptions), contract.AwaitSaleSettled, req).
		Get(ctx, &settled); err != nil {
		return fmt.Errorf("await the sale's last orders: %w", err)
	}
	if err := s.mu.Lock(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	s.view.Settling, s.view.Ending = false, true
	if s.view.Voided {
		// An order a void could not see yet (visibility lags) may have
		// been paid after its refunds: now that none runs, refund it too.
		if err := s.refund(ctx); err != nil {
			return err
		}
	}
	var agreed contract.StockObservation
	if err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, agreeOptions), contract.CheckSaleStock, req).
		Get(ctx, &agreed); err != nil {
		return fmt.Errorf("check the sale's stock: %w", err)
	}
	var report contract.SaleReport
	if err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, readOptions), contract.ReportSale,
		contract.SaleReportInput{SKU: s.in.SKU, Since: s.since}).Get(ctx, &report); err != nil {
		return fmt.Errorf("report the sale: %w", err)
	}
	s.view.Report = &report
	var ended contract.EndedSale
	if err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, saleStepOptions), contract.EndSale, req).
		Get(ctx, &ended); err != nil {
		return fmt.Errorf("end the sale: %w", err)
	}
	var removed contract.RemovedSaleKeys
	if err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, removeOptions), contract.RemoveSaleKeys,
		contract.RemoveSaleKeysInput{SKU: s.in.SKU, EndedAt: ended.EndedAt}).Get(ctx, &removed); err != nil {
		return fmt.Errorf("remove the sale's keys: %w", err)
	}
	s.view.Ending, s.view.EndedAt = false, ended.EndedAt
	s.logger.Info("sale ended", "units_sold", report.UnitsSold, "revenue", report.Revenue,
		"refunds", report.Refunds, "keys_removed", removed.Removed, "reopened", removed.Reopened)
	return nil
}

// refund refunds the paid orders of a voided sale and adds them to the
// view.
func (s *saleRun) refund(ctx workflow.Context) error {
	var refunded contract.RefundedOrders
	if err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, voidStepOptions), contract.RefundSaleOrders,
		contract.RefundSaleInput{SKU: s.in.SKU, Since: s.since, Reason: "sale voided"}).Get(ctx, &refunded); err != nil {
		return fmt.Errorf("refund the sale's paid orders: %w", err)
	}
	s.view.Refunded += refunded.Refunded
	return nil
}

// openNow freezes, shuffles and opens, unless the sale was closed first.
func (s *saleRun) openNow(ctx workflow.Context) error {
	if err := s.mu.Lock(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if s.view.State != flashsale.SaleStatePrequeue {
		return nil
	}
	if err := s.preflight(ctx); err != nil {
		return err
	}
	var opened flashsale.OpenedSale
	if err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, openStepOptions), contract.OpenSale,
		contract.SaleRequest{SKU: s.in.SKU}).Get(ctx, &opened); err != nil {
		return fmt.Errorf("open sale: %w", err)
	}
	s.view.State, s.view.Seed, s.view.Entrants = opened.State, opened.Seed, opened.Entrants
	s.view.OpenedAt = workflow.Now(ctx)
	s.logger.Info("sale open", "entrants", opened.Entrants, "state", opened.State)
	return nil
}

// voidStepOptions: cancelling every running order of a SKU lists and
// signals them page by page, heartbeating; a worker lost mid-way is seen
// by the heartbeat timeout and the retry skips what finished.
var voidStepOptions = workflow.ActivityOptions{
	StartToCloseTimeout: 10 * time.Minute,
	HeartbeatTimeout:    30 * time.Second,
	RetryPolicy:         saleStepOptions.RetryPolicy,
}

// void closes the sale (no pass or buy from then on), then cancels every
// order of it still unpaid and refunds the paid ones.
// It holds mu throughout, so no other control or the end interleaves.
func (s *saleRun) void(ctx workflow.Context, c SaleControl) (SaleView, error) {
	if err := s.mu.Lock(ctx); err != nil {
		return s.view, err
	}
	defer s.mu.Unlock()
	// Another Update, or the end, may have come first.
	if err := s.voidAllowed(ctx, c); err != nil {
		return s.view, err
	}
	if s.view.State != flashsale.SaleStateClosed {
		if err := s.write(ctx, c, flashsale.SaleStateClosed, flashsale.SaleStatePrequeue, flashsale.SaleStateOpen, flashsale.SaleStatePaused); err != nil {
			return s.view, err
		}
	}
	var voided contract.VoidedOrders
	if err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, voidStepOptions), contract.CancelSaleOrders,
		contract.SaleRequest{SKU: s.in.SKU}).Get(ctx, &voided); err != nil {
		return s.view, fmt.Errorf("cancel the sale's orders: %w", err)
	}
	s.view.Voided, s.view.Cancelled = true, voided.Cancelled
	if err := s.refund(ctx); err != nil {
		return s.view, err
	}
	s.logger.Info("sale voided", "cancelled", voided.Cancelled, "refunded", s.view.Refunded, "reason", c.Reason)
	return s.view, nil
}

// voidAllowed is void's validator: a sale not closed yet, or closed and
// still waiting for its orders to settle; once, and never once its end
// has begun.
func (s *saleRun) voidAllowed(_ workflow.Context, _ SaleControl) error {
	if s.view.Voided || s.view.Ending || (s.view.State == flashsale.SaleStateClosed && !s.view.Settling) {
		return stateConflict(s.view.State)
	}
	return nil
}

// allowed is a validator: the Update is accepted only in these states.
func (s *saleRun) allowed(states ...flashsale.SaleState) func(workflow.Context, SaleControl) error {
	return func(workflow.Context, SaleControl) error {
		for _, st := range states {
			if s.view.State == st {
				return nil
			}
		}
		return stateConflict(s.view.State)
	}
}

func stateConflict(st flashsale.SaleState) error {
	return temporal.NewNonRetryableApplicationError(fmt.Sprintf("the sale is %s", st),
		contract.TypeFor(flashsale.SaleStateConflict), nil)
}

// open asks the main loop to open now and answers once it has.
func (s *saleRun) open(ctx workflow.Context, _ SaleControl) (SaleView, error) {
	s.openAsked = true
	err := workflow.Await(ctx, func() bool { return s.view.State != flashsale.SaleStatePrequeue })
	return s.view, err
}

// move is an Update's handler: write state `to` to Redis if the sale is in
// one of from, then answer the view.
func (s *saleRun) move(to flashsale.SaleState, from ...flashsale.SaleState) func(workflow.Context, SaleControl) (SaleView, error) {
	return func(ctx workflow.Context, c SaleControl) (SaleView, error) {
		if err := s.mu.Lock(ctx); err != nil {
			return s.view, err
		}
		defer s.mu.Unlock()
		return s.view, s.write(ctx, c, to, from...)
	}
}

// write moves the sale to `to` if it is in one of from, writing it to
// Redis first; the caller holds mu.
func (s *saleRun) write(ctx workflow.Context, c SaleControl, to flashsale.SaleState, from ...flashsale.SaleState) error {
	// Another Update may have moved the sale since this one was validated.
	if err := s.allowed(from...)(ctx, c); err != nil {
		return err
	}
	var st flashsale.SaleState
	err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, saleStepOptions), contract.SetSaleState,
		contract.SaleStateChange{SKU: s.in.SKU, To: to, From: from}).Get(ctx, &st)
	if err != nil {
		if code, ok := contract.CodeOf(err); ok && code == flashsale.SaleStateConflict {
			return stateConflict(st)
		}
		return fmt.Errorf("%s sale: %w", to, err)
	}
	s.view.State = to
	if to == flashsale.SaleStateClosed {
		s.view.ClosedAt = workflow.Now(ctx)
	}
	s.logger.Info("sale "+string(to), "reason", c.Reason)
	return nil
}
