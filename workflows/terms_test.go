package workflows

import (
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/activities/contract"
)

// expectReservedWith is expectReserved for an order whose SKUs' terms
// CreateOrder read as res says (Amount and PayBy are filled in).
func (s *orderSuite) expectReservedWith(res contract.CreateOrderResult) time.Time {
	payBy := s.env.Now().Add(15 * time.Minute).UTC()
	res.Amount, res.PayBy = testAmount, payBy
	s.env.OnActivity(contract.ReserveStock, mock.Anything, mock.Anything).
		Return(contract.ReserveStockResult{Reservations: []flashsale.Reservation{{SKU: "1001", Quantity: 1}}}, nil).Once()
	s.env.OnActivity(contract.CreateOrder, mock.Anything, mock.Anything).Return(res, nil).Once()
	return payBy
}

// On a capture_if_held order, money received 2 s after pay_by, while the
// order still holds its unit, is captured: PAID, nothing closed, nothing
// refunded.
func (s *orderSuite) TestLatePaymentCapturedWhileHeld() {
	start := s.env.Now()
	payBy := s.expectReservedWith(contract.CreateOrderResult{LateCapture: true})
	s.env.OnActivity(contract.ConfirmPayment, mock.Anything, confirmInput("late")).Return(captured, nil).Once()
	var out PaymentOutcome
	s.pay(payBy.Sub(start)+2*time.Second,
		Payment{TransactionID: "late", Amount: testAmount, ReceivedAt: payBy.Add(2 * time.Second)},
		func(o PaymentOutcome) { out = o })

	s.env.ExecuteWorkflow(s.wf, input())

	s.Equal(PaymentOutcome{OrderID: testOrderID, TransactionID: "late", Status: flashsale.StatusPaid}, out)
	s.Equal(flashsale.StatusPaid, s.result().Status)
	s.env.AssertNotCalled(s.T(), "CloseOrder", mock.Anything, mock.Anything)
	s.env.AssertNotCalled(s.T(), "RecordRefund", mock.Anything, mock.Anything)
}

// A FAILED payment closes a release_on_failed order at once: cancelled,
// reason PAYMENT_FAILED, its unit back. On another order it changes
// nothing (TestPaymentTimeout's order ignores one the same way).
func (s *orderSuite) TestFailedPaymentReleasesAtOnce() {
	start := s.env.Now()
	s.expectReservedWith(contract.CreateOrderResult{ReleaseOnFailed: true})
	s.expectNobodyWaiting()
	s.env.OnActivity(contract.CloseOrder, mock.Anything, contract.CloseOrderInput{
		OrderID: testOrderID, Status: flashsale.StatusCancelled, Reason: flashsale.PaymentFailed,
	}).Return(contract.CloseOrderResult{}, nil).Once()
	s.env.OnActivity(contract.ReleaseStock, mock.Anything, mock.Anything).Return(contract.ReleaseStockResult{Released: 1}, nil).Once()
	s.env.RegisterDelayedCallback(func() {
		s.env.SignalWorkflow(SignalPaymentFailed, PaymentFailure{TransactionID: "t1"})
	}, time.Minute)

	s.env.ExecuteWorkflow(s.wf, input())

	v := s.result()
	s.Equal(flashsale.StatusCancelled, v.Status)
	s.Equal(flashsale.PaymentFailed, v.Reason)
	s.Less(s.env.Now().Sub(start), 2*time.Minute, "released at once, not at pay_by")
}

func (s *orderSuite) TestFailedPaymentWithoutTheRuleWaitsForTheDeadline() {
	start := s.env.Now()
	s.expectReserved()
	s.expectCompensation(flashsale.StatusExpired)
	s.env.RegisterDelayedCallback(func() {
		s.env.SignalWorkflow(SignalPaymentFailed, PaymentFailure{TransactionID: "t1"})
	}, time.Minute)

	s.env.ExecuteWorkflow(s.wf, input())

	s.Equal(flashsale.StatusExpired, s.result().Status)
	s.GreaterOrEqual(s.env.Now().Sub(start), 15*time.Minute)
}

// extend sends the extend-hold update after d and records its answer or
// refusal.
func (s *orderSuite) extend(d, by time.Duration, out *HoldExtended, refused *error) {
	s.env.RegisterDelayedCallback(func() {
		s.env.UpdateWorkflow(UpdateExtendHold, "", &testsuite.TestUpdateCallback{
			OnReject:   func(err error) { *refused = err },
			OnAccept:   func() {},
			OnComplete: func(v any, err error) { s.Require().NoError(err); *out = v.(HoldExtended) },
		}, HoldExtension{ExtendBy: by})
	}, d)
}

// The provider extends the hold once: pay_by moves in the database and the
// wait, money after the first deadline is in time; a second extension is
// refused before it is written to history.
func (s *orderSuite) TestHoldExtendedOnce() {
	start := s.env.Now()
	payBy := s.expectReserved()
	moved := payBy.Add(10 * time.Minute)
	s.env.OnActivity(contract.ExtendHold, mock.Anything, contract.ExtendHoldInput{OrderID: testOrderID, From: payBy, To: moved}).
		Return(contract.ExtendHoldResult{PayBy: moved}, nil).Once()
	s.env.OnActivity(contract.ConfirmPayment, mock.Anything, confirmInput("t1")).Return(captured, nil).Once()
	var first, second HoldExtended
	var firstErr, secondErr error
	s.extend(time.Minute, 10*time.Minute, &first, &firstErr)
	s.extend(2*time.Minute, time.Minute, &second, &secondErr)
	var out PaymentOutcome
	s.pay(payBy.Sub(start)+5*time.Minute, Payment{TransactionID: "t1", Amount: testAmount, ReceivedAt: payBy.Add(5 * time.Minute)},
		func(o PaymentOutcome) { out = o })

	s.env.ExecuteWorkflow(s.wf, input())

	s.NoError(firstErr)
	s.Equal(HoldExtended{OrderID: testOrderID, PayBy: moved}, first)
	s.ErrorContains(secondErr, "extended once already")
	s.Equal(flashsale.StatusPaid, out.Status, "in time by the extended deadline")
	v := s.result()
	s.Equal(moved, v.PayBy)
	s.True(v.HoldExtended)
}

// expectBooked mocks a booking (ReserveStock answers Deferred) and the
// order written freezing nothing.
func (s *orderSuite) expectBooked() time.Time {
	payBy := s.env.Now().Add(15 * time.Minute).UTC()
	s.env.OnActivity(contract.ReserveStock, mock.Anything, mock.MatchedBy(func(in contract.ReserveStockInput) bool { return !in.AtPayment })).
		Return(contract.ReserveStockResult{Deferred: true}, nil).Once()
	s.env.OnActivity(contract.CreateOrder, mock.Anything, mock.MatchedBy(func(in contract.CreateOrderInput) bool { return in.Deferred })).
		Return(contract.CreateOrderResult{Amount: testAmount, PayBy: payBy}, nil).Once()
	return payBy
}

// atPayment matches the take of a booked order's units as it is paid.
var atPayment = mock.MatchedBy(func(in contract.ReserveStockInput) bool { return in.AtPayment })

// A booked order takes its unit when paid, Redis then MySQL: PAID.
func (s *orderSuite) TestBookedOrderTakesItsUnitWhenPaid() {
	s.expectBooked()
	s.env.OnActivity(contract.ReserveStock, mock.Anything, atPayment).
		Return(contract.ReserveStockResult{Reservations: []flashsale.Reservation{{SKU: "1001", Quantity: 1}}}, nil).Once()
	s.env.OnActivity(contract.ConfirmPayment, mock.Anything, confirmInput("t1")).Return(captured, nil).Once()
	var out PaymentOutcome
	s.pay(time.Minute, Payment{TransactionID: "t1", Amount: testAmount}, func(o PaymentOutcome) { out = o })

	s.env.ExecuteWorkflow(s.wf, input())

	s.Equal(PaymentOutcome{OrderID: testOrderID, TransactionID: "t1", Status: flashsale.StatusPaid}, out)
	s.Equal(flashsale.StatusPaid, s.result().Status)
	s.env.AssertNotCalled(s.T(), "ReleaseStock", mock.Anything, mock.Anything)
}

// A booked order whose payment finds no unit in Redis: the money is
// recorded for refund (SOLD_OUT), MySQL is not asked, and the order is
// cancelled SOLD_OUT with its booking given back.
func (s *orderSuite) TestBookedOrderWithoutAUnitIsRefundedAndCancelled() {
	s.expectBooked()
	s.env.OnActivity(contract.ReserveStock, mock.Anything, atPayment).
		Return(contract.ReserveStockResult{}, temporal.NewNonRetryableApplicationError("sold out", contract.TypeFor(flashsale.SoldOut), nil)).Once()
	s.env.OnActivity(contract.RecordRefund, mock.Anything, contract.RecordRefundInput{
		OrderID: testOrderID, TransactionID: "t1", Amount: testAmount, Reason: flashsale.SoldOut,
	}).Return(contract.RecordRefundResult{PaymentStatus: flashsale.PaymentRefundRequired, OrderID: testOrderID}, nil).Once()
	s.env.OnActivity(contract.CloseOrder, mock.Anything, contract.CloseOrderInput{
		OrderID: testOrderID, Status: flashsale.StatusCancelled, Reason: flashsale.SoldOut,
	}).Return(contract.CloseOrderResult{}, nil).Once()
	s.env.OnActivity(contract.ReleaseStock, mock.Anything, contract.ReleaseStockInput{
		OrderID: testOrderID, Items: []flashsale.Item{{SKU: "1001", Quantity: 1}}, Deferred: true,
	}).Return(contract.ReleaseStockResult{}, nil).Once()
	var out PaymentOutcome
	s.pay(time.Minute, Payment{TransactionID: "t1", Amount: testAmount}, func(o PaymentOutcome) { out = o })

	s.env.ExecuteWorkflow(s.wf, input())

	s.Equal(RefundRequired, out.Refund)
	s.Equal(flashsale.SoldOut, out.Reason)
	v := s.result()
	s.Equal(flashsale.StatusCancelled, v.Status)
	s.Equal(flashsale.SoldOut, v.Reason)
	s.env.AssertNotCalled(s.T(), "ConfirmPayment", mock.Anything, mock.Anything)
	s.env.AssertNotCalled(s.T(), "OfferToWaitlist", mock.Anything, mock.Anything)
}
