package workflows

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/activities/contract"
)

// A sale's end (docs/design/fair-sale.md, "The sale's end"): closes_at on
// the workflow's timer, moved by the closes_at Update, and the close of a
// SKU sold without a queue. Buyers meet the end in Redis: the spend script
// refuses every pass from closes_at on by Redis's clock, so no API
// instance sells past it, and the timer then closes the sale and ends it.

// saleEndChange is the patch (docs/versioning.md) that gave a sale its
// end. A sale started before it has no closes_at and takes no closes_at
// Update; it is closed by hand, as it was.
const saleEndChange = "sale-closes-at"

// untilEnd waits until the sale is closed: by an Update, or by the timer
// at closes_at, re-armed whenever the closes_at Update moves it.
func (s *saleRun) untilEnd(ctx workflow.Context) error {
	closed := func() bool { return s.view.State == flashsale.SaleStateClosed }
	for !closed() {
		at := s.view.ClosesAt
		if at.IsZero() {
			if err := workflow.Await(ctx, func() bool { return closed() || !s.view.ClosesAt.IsZero() }); err != nil {
				return err
			}
			continue
		}
		moved, err := workflow.AwaitWithTimeout(ctx, at.Sub(workflow.Now(ctx)),
			func() bool { return closed() || !s.view.ClosesAt.Equal(at) })
		if err != nil {
			return err
		}
		if !moved {
			if err := s.closeNow(ctx, "closes_at", at); err != nil {
				return err
			}
		}
	}
	return nil
}

// closeNow closes the sale (the reason for its audit trail) unless it is
// closed already or, for the end at (non-zero), unless the closes_at
// Update moved the end meanwhile.
func (s *saleRun) closeNow(ctx workflow.Context, reason string, at time.Time) error {
	if err := s.mu.Lock(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if s.view.State == flashsale.SaleStateClosed || (!at.IsZero() && !s.view.ClosesAt.Equal(at)) {
		return nil
	}
	return s.write(ctx, SaleControl{Reason: reason}, flashsale.SaleStateClosed,
		flashsale.SaleStatePrequeue, flashsale.SaleStateOpen, flashsale.SaleStatePaused)
}

// endAllowed is the closes_at Update's validator: a sale with an end's
// code, not closed, and a new end after now and, before the open, after
// opens_at.
func (s *saleRun) endAllowed(ctx workflow.Context, c SaleEndChange) error {
	switch {
	case !s.ends || s.view.Unqueued:
		return temporal.NewNonRetryableApplicationError("this sale has no end to move: close it",
			contract.TypeFor(flashsale.SaleStateConflict), nil)
	case s.view.State == flashsale.SaleStateClosed:
		return stateConflict(s.view.State)
	case !c.ClosesAt.After(workflow.Now(ctx)):
		return temporal.NewNonRetryableApplicationError("closes_at must be in the future (close the sale to end it now)",
			contract.TypeFor(flashsale.Invalid), nil)
	case s.view.State == flashsale.SaleStatePrequeue && !c.ClosesAt.After(s.in.OpensAt):
		return temporal.NewNonRetryableApplicationError("closes_at must be after opens_at",
			contract.TypeFor(flashsale.Invalid), nil)
	}
	return nil
}

// moveEnd writes the new end to Redis, where every API instance's spend
// reads it, then re-arms the timer (untilEnd) and answers the view.
func (s *saleRun) moveEnd(ctx workflow.Context, c SaleEndChange) (SaleView, error) {
	if err := s.mu.Lock(ctx); err != nil {
		return s.view, err
	}
	defer s.mu.Unlock()
	// The sale may have closed since the Update was validated.
	if err := s.endAllowed(ctx, c); err != nil {
		return s.view, err
	}
	var st flashsale.SaleState
	if err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, saleStepOptions), contract.SetSaleEnd,
		contract.SetSaleEndInput{SKU: s.in.SKU, ClosesAt: c.ClosesAt}).Get(ctx, &st); err != nil {
		return s.view, fmt.Errorf("move the sale's end: %w", err)
	}
	s.logger.Info("sale end moved", "from", s.view.ClosesAt, "to", c.ClosesAt, "reason", c.Reason)
	s.view.ClosesAt = c.ClosesAt
	return s.view, nil
}
