package workflows

import (
	"context"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/testsuite"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/activities/contract"
)

// moveEnd sends the closes_at Update after d; a non-empty code expects the
// validator to reject it with that code.
func (s *saleSuite) moveEnd(d time.Duration, to time.Time, code flashsale.Code) {
	s.env.RegisterDelayedCallback(func() {
		s.env.UpdateWorkflow(UpdateSaleClosesAt, "end"+to.String(), &testsuite.TestUpdateCallback{
			OnReject: func(err error) {
				got, _ := contract.CodeOf(err)
				s.Equal(code, got, "closes_at rejected: %v", err)
			},
			OnAccept: func() { s.Empty(code, "closes_at accepted") },
			OnComplete: func(v any, err error) {
				if code == "" {
					s.Require().NoError(err)
					s.True(to.Equal(v.(SaleView).ClosesAt))
				}
			},
		}, SaleEndChange{ClosesAt: to, Reason: "test"})
	}, d)
}

// A sale with closes_at closes on its own timer at the end as the closes_at
// Update left it: an extension is written to Redis and moves the timer, an
// end in the past or before opens_at is refused, and after the close the
// end moves no more.
func (s *saleSuite) TestClosesAtItsEndAsMoved() {
	start := s.env.Now().UTC()
	in := SaleInput{SKU: "1001", OpensAt: start.Add(time.Hour), ClosesAt: start.Add(2 * time.Hour)}
	s.expectPrepared(in)
	s.expectOpened()
	extended := start.Add(3 * time.Hour)
	s.env.OnActivity(contract.SetSaleEnd, mock.Anything, contract.SetSaleEndInput{SKU: "1001", ClosesAt: extended}).
		Return(flashsale.SaleStateOpen, nil).Once()
	var closedAt time.Time
	s.env.OnActivity(contract.SetSaleState, mock.Anything, contract.SaleStateChange{SKU: "1001", To: flashsale.SaleStateClosed,
		From: []flashsale.SaleState{flashsale.SaleStatePrequeue, flashsale.SaleStateOpen, flashsale.SaleStatePaused}}).
		Return(func(context.Context, contract.SaleStateChange) (flashsale.SaleState, error) {
			closedAt = s.env.Now()
			return flashsale.SaleStateClosed, nil
		}).Once()
	s.expectEnd(contract.SaleReport{UnitsSold: 1})
	s.moveEnd(30*time.Minute, start.Add(10*time.Minute), flashsale.Invalid)     // in the past
	s.moveEnd(30*time.Minute, start.Add(50*time.Minute), flashsale.Invalid)     // before opens_at
	s.moveEnd(90*time.Minute, extended, "")                                     // extended
	s.moveEnd(4*time.Hour, start.Add(5*time.Hour), flashsale.SaleStateConflict) // closed
	s.env.ExecuteWorkflow(SaleWorkflow, in)
	v := s.result()
	s.Equal(flashsale.SaleStateClosed, v.State)
	s.True(extended.Equal(v.ClosesAt))
	s.True(closedAt.Equal(extended), "closed at the extended end, %s", closedAt.Sub(start))
	s.EqualValues(1, v.Report.UnitsSold)
}

// A SKU sold without a queue: the sale is closed as it starts (no open, no
// timer), reports the orders since the input's Since, and takes no
// closes_at Update.
func (s *saleSuite) TestUnqueuedCloseEndsAtOnce() {
	start := s.env.Now().UTC()
	since := start.Add(-time.Hour)
	in := SaleInput{SKU: "1001", OpensAt: start, Unqueued: true, Since: since}
	s.expectPrepared(in)
	s.expectState(flashsale.SaleStateClosed, flashsale.SaleStatePrequeue, flashsale.SaleStateOpen, flashsale.SaleStatePaused)
	s.env.OnActivity(contract.AwaitSaleSettled, mock.Anything, contract.SaleRequest{SKU: "1001"}).
		Return(contract.SaleSettled{Looks: 2}, nil).Once()
	s.env.OnActivity(contract.CheckSaleStock, mock.Anything, contract.SaleRequest{SKU: "1001"}).
		Return(contract.StockObservation{SKU: "1001"}, nil).Once()
	s.env.OnActivity(contract.ReportSale, mock.Anything, contract.SaleReportInput{SKU: "1001", Since: since}).
		Return(contract.SaleReport{UnitsSold: 7}, nil).Once()
	s.env.OnActivity(contract.EndSale, mock.Anything, contract.SaleRequest{SKU: "1001"}).
		Return(contract.EndedSale{EndedAt: start}, nil).Once()
	s.env.OnActivity(contract.RemoveSaleKeys, mock.Anything, contract.RemoveSaleKeysInput{SKU: "1001", EndedAt: start}).
		Return(contract.RemovedSaleKeys{Removed: 3}, nil).Once()
	s.env.ExecuteWorkflow(SaleWorkflow, in)
	v := s.result()
	s.Equal(flashsale.SaleStateClosed, v.State)
	s.True(v.Unqueued)
	s.True(v.OpenedAt.IsZero(), "no queue opened")
	s.EqualValues(7, v.Report.UnitsSold)
}
