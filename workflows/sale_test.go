package workflows

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/suite"
	"go.temporal.io/sdk/testsuite"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/activities"
	"github.com/flashsale/flashsale/activities/contract"
)

type saleSuite struct {
	suite.Suite
	testsuite.WorkflowTestSuite
	env *testsuite.TestWorkflowEnvironment
	// openedAt is the test clock when OpenSale ran.
	openedAt time.Time
}

func TestSaleWorkflow(t *testing.T) { suite.Run(t, new(saleSuite)) }

func (s *saleSuite) SetupTest() {
	s.env = s.NewTestWorkflowEnvironment()
	s.env.RegisterActivity(&activities.Activities{})
	s.openedAt = time.Time{}
	// The go/no-go before the open passes for a sale with no expected
	// peak (salepreflight_test.go gives one to make it fail).
	s.env.OnActivity(contract.PreflightSale, mock.Anything,
		mock.MatchedBy(func(in contract.PreflightInput) bool { return in.ExpectedPeak == 0 })).
		Return(contract.PreflightReport{Checks: []contract.PreflightCheck{{Name: "stock:1001", OK: true}}}, nil).Maybe()
}

func (s *saleSuite) AfterTest(_, _ string) { s.env.AssertExpectations(s.T()) }

func (s *saleSuite) expectPrepared(in SaleInput) {
	s.env.OnActivity(contract.PrepareSale, mock.Anything, mock.MatchedBy(func(p contract.PrepareSaleInput) bool {
		return p.SKU == in.SKU && p.OpensAt.Equal(in.OpensAt) && p.PassTTL == DefaultPassTTL && p.SaleID != ""
	})).Return(contract.PreparedSale{SeedHash: "h"}, nil).Once()
}

func (s *saleSuite) expectOpened() {
	s.env.OnActivity(contract.OpenSale, mock.Anything, contract.SaleRequest{SKU: "1001"}).
		Return(func(context.Context, contract.SaleRequest) (flashsale.OpenedSale, error) {
			s.openedAt = s.env.Now()
			return flashsale.OpenedSale{Entrants: 3, Seed: "seed", State: flashsale.SaleStateOpen}, nil
		}).Once()
}

func (s *saleSuite) expectState(to flashsale.SaleState, from ...flashsale.SaleState) {
	s.env.OnActivity(contract.SetSaleState, mock.Anything, contract.SaleStateChange{SKU: "1001", To: to, From: from}).
		Return(to, nil).Once()
}

// expectEnd expects the closed sale's end: its orders settle, MySQL and
// Redis agree, the report, the mark in MySQL and the keys' removal, in
// that order.
func (s *saleSuite) expectEnd(report contract.SaleReport) {
	var step int
	in := func(want int) func(mock.Arguments) {
		return func(mock.Arguments) {
			s.Equal(want, step, "end step out of order")
			step++
		}
	}
	s.env.OnActivity(contract.AwaitSaleSettled, mock.Anything, contract.SaleRequest{SKU: "1001"}).
		Return(contract.SaleSettled{Looks: 2}, nil).Run(in(0)).Once()
	s.env.OnActivity(contract.CheckSaleStock, mock.Anything, contract.SaleRequest{SKU: "1001"}).
		Return(contract.StockObservation{SKU: "1001"}, nil).Run(in(1)).Once()
	s.env.OnActivity(contract.ReportSale, mock.Anything, mock.MatchedBy(func(in contract.SaleReportInput) bool {
		return in.SKU == "1001" && !in.Since.IsZero()
	})).Return(report, nil).Run(in(2)).Once()
	s.env.OnActivity(contract.EndSale, mock.Anything, contract.SaleRequest{SKU: "1001"}).
		Return(contract.EndedSale{EndedAt: time.Date(2026, 12, 24, 20, 0, 0, 0, time.UTC)}, nil).Run(in(3)).Once()
	s.env.OnActivity(contract.RemoveSaleKeys, mock.Anything, contract.RemoveSaleKeysInput{
		SKU: "1001", EndedAt: time.Date(2026, 12, 24, 20, 0, 0, 0, time.UTC)}).
		Return(contract.RemovedSaleKeys{Removed: 42}, nil).Run(in(4)).Once()
}

// control sends an operator Update after d and checks its answer; a
// non-empty code expects the validator to reject it with that code.
func (s *saleSuite) control(d time.Duration, name string, code flashsale.Code, check func(SaleView)) {
	s.env.RegisterDelayedCallback(func() {
		s.env.UpdateWorkflow(name, name+d.String(), &testsuite.TestUpdateCallback{
			OnReject: func(err error) {
				got, _ := contract.CodeOf(err)
				s.Equal(code, got, "%s rejected: %v", name, err)
			},
			OnAccept: func() { s.Empty(code, "%s accepted", name) },
			OnComplete: func(v any, err error) {
				if code == "" {
					s.Require().NoError(err)
					check(v.(SaleView))
				}
			},
		}, SaleControl{Reason: "test"})
	}, d)
}

func (s *saleSuite) result() SaleView {
	s.Require().True(s.env.IsWorkflowCompleted())
	s.Require().NoError(s.env.GetWorkflowError())
	var v SaleView
	s.Require().NoError(s.env.GetWorkflowResult(&v))
	return v
}

// The sale opens on its own timer, at opens_at and not before; operators
// pause, resume and close it, and a control its state does not allow is
// rejected by the validator with SALE_STATE_CONFLICT.
func (s *saleSuite) TestOpensOnItsTimer() {
	start := s.env.Now()
	in := SaleInput{SKU: "1001", OpensAt: start.Add(time.Hour)}
	s.expectPrepared(in)
	s.expectOpened()
	s.expectState(flashsale.SaleStatePaused, flashsale.SaleStateOpen)
	s.expectState(flashsale.SaleStateOpen, flashsale.SaleStatePaused)
	s.expectState(flashsale.SaleStateClosed, flashsale.SaleStatePrequeue, flashsale.SaleStateOpen, flashsale.SaleStatePaused)
	s.control(30*time.Minute, UpdateSalePause, flashsale.SaleStateConflict, nil)
	s.control(30*time.Minute, UpdateSaleResume, flashsale.SaleStateConflict, nil)
	s.env.RegisterDelayedCallback(func() {
		v, err := s.env.QueryWorkflow(QuerySale)
		s.Require().NoError(err)
		var view SaleView
		s.Require().NoError(v.Get(&view))
		s.Equal(flashsale.SaleStatePrequeue, view.State)
		s.Equal("h", view.SeedHash)
		s.Empty(view.Seed, "the seed is not revealed before the open")
	}, 59*time.Minute)
	s.control(61*time.Minute, UpdateSaleOpen, flashsale.SaleStateConflict, nil)
	s.control(62*time.Minute, UpdateSalePause, "", func(v SaleView) { s.Equal(flashsale.SaleStatePaused, v.State) })
	s.control(63*time.Minute, UpdateSalePause, flashsale.SaleStateConflict, nil)
	s.control(64*time.Minute, UpdateSaleResume, "", func(v SaleView) { s.Equal(flashsale.SaleStateOpen, v.State) })
	s.control(65*time.Minute, UpdateSaleClose, "", func(v SaleView) { s.Equal(flashsale.SaleStateClosed, v.State) })
	s.expectEnd(contract.SaleReport{UnitsSold: 3, Revenue: 300})
	s.env.ExecuteWorkflow(SaleWorkflow, in)

	s.Equal(in.OpensAt, s.openedAt, "opened by the timer, at opens_at")
	v := s.result()
	s.Equal(flashsale.SaleStateClosed, v.State)
	s.Require().NotNil(v.Report)
	s.Equal(int64(3), v.Report.UnitsSold)
	s.False(v.EndedAt.IsZero())
	s.Equal("seed", v.Seed)
	s.Equal(int64(3), v.Entrants)
	s.True(in.OpensAt.Equal(v.OpenedAt), "%v", v.OpenedAt)
	s.True(start.Add(65*time.Minute).Equal(v.ClosedAt), "%v", v.ClosedAt)
}

// An operator's open Update opens the sale at once and answers once it is
// open.
func (s *saleSuite) TestOpenUpdateOpensEarly() {
	in := SaleInput{SKU: "1001", OpensAt: s.env.Now().Add(time.Hour)}
	s.expectPrepared(in)
	s.expectOpened()
	s.expectState(flashsale.SaleStateClosed, flashsale.SaleStatePrequeue, flashsale.SaleStateOpen, flashsale.SaleStatePaused)
	s.control(10*time.Minute, UpdateSaleOpen, "", func(v SaleView) {
		s.Equal(flashsale.SaleStateOpen, v.State)
		s.Equal("seed", v.Seed)
	})
	s.control(20*time.Minute, UpdateSaleClose, "", func(v SaleView) { s.Equal(flashsale.SaleStateClosed, v.State) })
	s.expectEnd(contract.SaleReport{})
	start := s.env.Now()
	s.env.ExecuteWorkflow(SaleWorkflow, in)
	s.Equal(start.Add(10*time.Minute), s.openedAt)
	s.result()
}

// A sale closed before it opened never shuffles.
func (s *saleSuite) TestCloseBeforeOpen() {
	in := SaleInput{SKU: "1001", OpensAt: s.env.Now().Add(time.Hour)}
	s.expectPrepared(in)
	s.expectState(flashsale.SaleStateClosed, flashsale.SaleStatePrequeue, flashsale.SaleStateOpen, flashsale.SaleStatePaused)
	s.control(time.Minute, UpdateSaleClose, "", func(v SaleView) { s.Equal(flashsale.SaleStateClosed, v.State) })
	s.expectEnd(contract.SaleReport{})
	s.env.ExecuteWorkflow(SaleWorkflow, in)
	v := s.result()
	s.Empty(v.Seed)
	s.True(s.openedAt.IsZero())
}

// Bad input fails the workflow at once, touching nothing.
func (s *saleSuite) TestInvalidInput() {
	s.env.ExecuteWorkflow(SaleWorkflow, SaleInput{SKU: "bad sku", OpensAt: s.env.Now()})
	s.Require().True(s.env.IsWorkflowCompleted())
	code, _ := contract.CodeOf(s.env.GetWorkflowError())
	s.Equal(flashsale.Invalid, code)
}

// void closes the sale first, then cancels its unpaid orders and refunds
// the paid ones, and answers how many; once the orders settled it refunds
// any paid after (none here) and ends as a close does. A second void is
// refused.
func (s *saleSuite) TestVoid() {
	in := SaleInput{SKU: "1001", OpensAt: s.env.Now().Add(time.Minute)}
	s.expectPrepared(in)
	s.expectOpened()
	s.expectState(flashsale.SaleStateClosed, flashsale.SaleStatePrequeue, flashsale.SaleStateOpen, flashsale.SaleStatePaused)
	s.env.OnActivity(contract.CancelSaleOrders, mock.Anything, contract.SaleRequest{SKU: "1001"}).
		Return(contract.VoidedOrders{Cancelled: 2}, nil).Once()
	refunds := 0
	s.env.OnActivity(contract.RefundSaleOrders, mock.Anything, mock.MatchedBy(func(in contract.RefundSaleInput) bool {
		return in.SKU == "1001" && !in.Since.IsZero() && in.Reason != ""
	})).Return(func(context.Context, contract.RefundSaleInput) (contract.RefundedOrders, error) {
		refunds++
		return contract.RefundedOrders{Refunded: map[int]int{1: 1, 2: 0}[refunds]}, nil
	}).Twice()
	s.expectEnd(contract.SaleReport{RefundedOrders: 1})
	s.control(2*time.Minute, UpdateSaleVoid, "", func(v SaleView) {
		s.Equal(flashsale.SaleStateClosed, v.State)
		s.True(v.Voided)
		s.Equal(2, v.Cancelled)
		s.Equal(1, v.Refunded)
	})
	s.control(3*time.Minute, UpdateSaleVoid, flashsale.SaleStateConflict, nil)
	s.env.ExecuteWorkflow(SaleWorkflow, in)
	v := s.result()
	s.True(v.Voided)
	s.Equal(1, v.Refunded)
	s.Equal(2, refunds, "refunded at the void and again once settled")
}

// A closed sale still settling accepts a void: it cancels what is still
// unpaid and refunds what was paid, then the sale ends.
func (s *saleSuite) TestVoidWhileSettling() {
	in := SaleInput{SKU: "1001", OpensAt: s.env.Now().Add(time.Minute)}
	s.expectPrepared(in)
	s.expectOpened()
	s.expectState(flashsale.SaleStateClosed, flashsale.SaleStatePrequeue, flashsale.SaleStateOpen, flashsale.SaleStatePaused)
	settled := false
	s.env.OnActivity(contract.AwaitSaleSettled, mock.Anything, contract.SaleRequest{SKU: "1001"}).
		Return(func(context.Context, contract.SaleRequest) (contract.SaleSettled, error) {
			return contract.SaleSettled{}, nil
		}).After(10 * time.Minute).Run(func(mock.Arguments) { settled = true }).Once()
	s.env.OnActivity(contract.CancelSaleOrders, mock.Anything, contract.SaleRequest{SKU: "1001"}).
		Return(contract.VoidedOrders{Cancelled: 1}, nil).Once()
	s.env.OnActivity(contract.RefundSaleOrders, mock.Anything, mock.Anything).
		Return(contract.RefundedOrders{Refunded: 3}, nil).Once()
	s.env.OnActivity(contract.RefundSaleOrders, mock.Anything, mock.Anything).
		Return(contract.RefundedOrders{}, nil).Once()
	s.env.OnActivity(contract.CheckSaleStock, mock.Anything, mock.Anything).Return(contract.StockObservation{}, nil).Once()
	s.env.OnActivity(contract.ReportSale, mock.Anything, mock.Anything).Return(contract.SaleReport{RefundedOrders: 3}, nil).Once()
	s.env.OnActivity(contract.EndSale, mock.Anything, mock.Anything).Return(contract.EndedSale{EndedAt: time.Unix(1, 0)}, nil).Once()
	s.env.OnActivity(contract.RemoveSaleKeys, mock.Anything, mock.Anything).Return(contract.RemovedSaleKeys{}, nil).Once()
	s.control(2*time.Minute, UpdateSaleClose, "", func(v SaleView) { s.Equal(flashsale.SaleStateClosed, v.State) })
	s.control(3*time.Minute, UpdateSaleVoid, "", func(v SaleView) {
		s.False(settled, "voided while settling")
		s.True(v.Voided)
		s.Equal(3, v.Refunded)
	})
	s.env.ExecuteWorkflow(SaleWorkflow, in)
	v := s.result()
	s.Equal(3, v.Refunded)
	s.Equal(int64(3), v.Report.RefundedOrders)
}
