package workflows

import (
	"context"
	"errors"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/temporal"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/activities/contract"
)

// Tests of the bounds on an open order (boundedPaymentChangeID): no payment,
// however it fails, holds an order past its deadline, and compensation that
// cannot finish shows the order STALLED instead of hiding.

var captured = contract.ConfirmPaymentResult{OrderStatus: flashsale.StatusPaid, PaymentStatus: flashsale.PaymentCaptured}

func conflictErr(txn, recordedFor string) error {
	return temporal.NewNonRetryableApplicationError("transaction "+txn+" is recorded for order "+recordedFor,
		contract.TypeFor(flashsale.TransactionConflict), nil,
		contract.TransactionConflictDetails{TransactionID: txn, RecordedFor: recordedFor})
}

func confirmInput(txn string) contract.ConfirmPaymentInput {
	return contract.ConfirmPaymentInput{OrderID: testOrderID, TransactionID: txn, Amount: testAmount}
}

// expectExpiry mocks the compensation of an expired order (CloseOrder,
// nobody waiting, ReleaseStock) and notes when CloseOrder ran in closedAt.
func (s *orderSuite) expectExpiry(closedAt *time.Time) {
	s.env.OnActivity(contract.CloseOrder, mock.Anything, contract.CloseOrderInput{
		OrderID: testOrderID, Status: flashsale.StatusExpired, Reason: flashsale.PaymentTimeout,
	}).Run(func(mock.Arguments) { *closedAt = s.env.Now() }).Return(contract.CloseOrderResult{}, nil).Once()
	s.expectNobodyWaiting()
	s.env.OnActivity(contract.ReleaseStock, mock.Anything, mock.Anything).Return(contract.ReleaseStockResult{Released: 1}, nil).Once()
}

// queryAt reads the status query after d of workflow time into v.
func (s *orderSuite) queryAt(d time.Duration, v *OrderView) {
	s.env.RegisterDelayedCallback(func() {
		res, err := s.env.QueryWorkflow(QueryStatus)
		s.Require().NoError(err)
		s.Require().NoError(res.Get(v))
	}, d)
}

// A transaction another order holds is answered as a conflict, the order
// stays payable, and a fresh transaction pays it. Before, the conflict was
// retried forever and every later payment waited behind it.
func (s *orderSuite) TestTransactionConflictThenFreshTransactionPays() {
	s.expectReserved()
	s.env.OnActivity(contract.ConfirmPayment, mock.Anything, confirmInput("t1")).Return(contract.ConfirmPaymentResult{}, conflictErr("t1", "o-other")).Once()
	s.env.OnActivity(contract.ConfirmPayment, mock.Anything, confirmInput("t2")).Return(captured, nil).Once()

	var first, again, second PaymentOutcome
	s.pay(time.Minute, Payment{TransactionID: "t1", Amount: testAmount}, func(o PaymentOutcome) { first = o })
	var between OrderView
	s.queryAt(2*time.Minute, &between)
	s.pay(3*time.Minute, Payment{TransactionID: "t1", Amount: testAmount}, func(o PaymentOutcome) { again = o })
	s.pay(4*time.Minute, Payment{TransactionID: "t2", Amount: testAmount}, func(o PaymentOutcome) { second = o })

	s.env.ExecuteWorkflow(s.wf, input())

	conflict := PaymentOutcome{OrderID: testOrderID, TransactionID: "t1", Status: flashsale.StatusPendingPayment,
		Conflict: true, Reason: flashsale.TransactionConflict}
	s.Equal(conflict, first)
	s.Equal(flashsale.StatusPendingPayment, between.Status)
	s.Equal([]PaymentOutcome{conflict}, between.Payments, "operators see the conflict in the status query")
	// The repeat carries the same update id, so it gets the stored answer.
	s.Equal(conflict, again)
	s.Equal(PaymentOutcome{OrderID: testOrderID, TransactionID: "t2", Status: flashsale.StatusPaid}, second)
	v := s.result()
	s.Equal(flashsale.StatusPaid, v.Status)
	s.Equal([]PaymentOutcome{conflict, second}, v.Payments)
	s.env.AssertNotCalled(s.T(), "RecordRefund", mock.Anything, mock.Anything)
	s.env.AssertNotCalled(s.T(), "CloseOrder", mock.Anything, mock.Anything)
}

// A conflict and then nothing: the order expires on its deadline and is
// compensated as any unpaid order.
func (s *orderSuite) TestTransactionConflictThenExpires() {
	start := s.env.Now()
	payBy := s.expectReserved()
	s.env.OnActivity(contract.ConfirmPayment, mock.Anything, confirmInput("t1")).Return(contract.ConfirmPaymentResult{}, conflictErr("t1", "o-other")).Once()
	s.expectNobodyWaiting()
	s.env.OnActivity(contract.ReleaseStock, mock.Anything, mock.Anything).Return(contract.ReleaseStockResult{Released: 1}, nil).Once()
	var closedAt time.Time
	s.env.OnActivity(contract.CloseOrder, mock.Anything, contract.CloseOrderInput{
		OrderID: testOrderID, Status: flashsale.StatusExpired, Reason: flashsale.PaymentTimeout,
	}).Run(func(mock.Arguments) { closedAt = s.env.Now() }).Return(contract.CloseOrderResult{}, nil).Once()
	s.env.RegisterDelayedCallback(func() {
		s.env.SignalWorkflow(SignalPayment, Payment{TransactionID: "t1", Amount: testAmount})
	}, time.Minute)

	s.env.ExecuteWorkflow(s.wf, input())

	v := s.result()
	s.Equal(flashsale.StatusExpired, v.Status)
	s.Equal(flashsale.PaymentTimeout, v.Reason)
	s.Equal([]PaymentOutcome{{OrderID: testOrderID, TransactionID: "t1", Status: flashsale.StatusPendingPayment,
		Conflict: true, Reason: flashsale.TransactionConflict}}, v.Payments)
	s.Equal(payBy.Add(arrivalGrace).Sub(start), closedAt.Sub(start), "closed on its deadline, after the arrival grace")
}

// A payment whose transaction belongs to another order, arriving after the
// order closed: a conflict, not a refund (which would refund the other
// order's sale).
func (s *orderSuite) TestLateTransactionOfAnotherOrderIsAConflict() {
	s.expectReserved()
	s.env.OnActivity(contract.CloseOrder, mock.Anything, mock.Anything).Return(contract.CloseOrderResult{}, nil).Once()
	s.expectNobodyWaiting()
	s.env.OnActivity(contract.RecordRefund, mock.Anything, contract.RecordRefundInput{
		OrderID: testOrderID, TransactionID: "t1", Amount: testAmount, Reason: flashsale.OrderClosed,
	}).Return(contract.RecordRefundResult{}, conflictErr("t1", "o-other")).Once()
	var late PaymentOutcome
	s.pay(20*time.Minute, Payment{TransactionID: "t1", Amount: testAmount}, func(o PaymentOutcome) { late = o })
	// Keep the workflow open for the late payment: it is running its
	// compensation while the payment arrives.
	s.env.OnActivity(contract.ReleaseStock, mock.Anything, mock.Anything).After(10*time.Minute).
		Return(contract.ReleaseStockResult{Released: 1}, nil).Once()

	s.env.ExecuteWorkflow(s.wf, input())

	want := PaymentOutcome{OrderID: testOrderID, TransactionID: "t1", Status: flashsale.StatusExpired,
		Conflict: true, Reason: flashsale.TransactionConflict}
	s.Equal(want, late)
	v := s.result()
	s.Equal(flashsale.StatusExpired, v.Status)
	s.Equal([]PaymentOutcome{want}, v.Payments)
}

// A payment the database keeps failing (retryable) cannot hold the order:
// it closes by pay_by + paymentGrace, and the payment, still pending, is
// settled late as a refund.
func (s *orderSuite) TestStuckPaymentStillExpiresOnTime() {
	start := s.env.Now()
	payBy := s.expectReserved()
	s.env.OnActivity(contract.ConfirmPayment, mock.Anything, confirmInput("t1")).
		Return(contract.ConfirmPaymentResult{}, errors.New("driver: bad connection"))
	var closedAt time.Time
	s.expectExpiry(&closedAt)
	s.env.OnActivity(contract.RecordRefund, mock.Anything, contract.RecordRefundInput{
		OrderID: testOrderID, TransactionID: "t1", Amount: testAmount, Reason: flashsale.OrderClosed,
	}).Return(contract.RecordRefundResult{PaymentStatus: flashsale.PaymentRefundRequired, OrderID: testOrderID}, nil).Once()
	var outcome PaymentOutcome
	s.pay(14*time.Minute+59*time.Second, Payment{TransactionID: "t1", Amount: testAmount}, func(o PaymentOutcome) { outcome = o })

	s.env.ExecuteWorkflow(s.wf, input())

	s.False(closedAt.Before(payBy), "not closed before the deadline: %v", closedAt.Sub(start))
	s.LessOrEqual(closedAt.Sub(start), payBy.Add(paymentGrace).Sub(start), "closed by pay_by + grace")
	refunded := PaymentOutcome{OrderID: testOrderID, TransactionID: "t1", Status: flashsale.StatusExpired,
		Refund: RefundRequired, Reason: flashsale.OrderClosed}
	s.Equal(refunded, outcome)
	v := s.result()
	s.Equal(flashsale.StatusExpired, v.Status)
	s.Equal([]PaymentOutcome{refunded}, v.Payments)
}

// The stuck payment did commit, late: CloseOrder's compare-and-set finds the
// order PAID. The order is paid, nothing is released, and the payment is
// answered as captured, not as a refund.
func (s *orderSuite) TestStuckPaymentThatCommittedLateIsPaid() {
	s.expectReserved()
	s.env.OnActivity(contract.ConfirmPayment, mock.Anything, confirmInput("t1")).
		Return(contract.ConfirmPaymentResult{}, errors.New("i/o timeout"))
	s.env.OnActivity(contract.CloseOrder, mock.Anything, mock.Anything).Return(contract.CloseOrderResult{},
		temporal.NewNonRetryableApplicationError("order already paid", contract.TypeFor(flashsale.AlreadyPaid), nil)).Once()
	s.env.OnActivity(contract.RecordRefund, mock.Anything, contract.RecordRefundInput{
		OrderID: testOrderID, TransactionID: "t1", Amount: testAmount, Reason: flashsale.AlreadyPaid,
	}).Return(contract.RecordRefundResult{PaymentStatus: flashsale.PaymentCaptured, OrderID: testOrderID}, nil).Once()
	var outcome PaymentOutcome
	s.pay(14*time.Minute+30*time.Second, Payment{TransactionID: "t1", Amount: testAmount}, func(o PaymentOutcome) { outcome = o })

	s.env.ExecuteWorkflow(s.wf, input())

	paid := PaymentOutcome{OrderID: testOrderID, TransactionID: "t1", Status: flashsale.StatusPaid}
	s.Equal(paid, outcome)
	v := s.result()
	s.Equal(flashsale.StatusPaid, v.Status)
	s.Empty(v.Reason)
	s.Equal([]PaymentOutcome{paid}, v.Payments)
	s.env.AssertNotCalled(s.T(), "ReleaseStock", mock.Anything, mock.Anything)
	s.env.AssertNotCalled(s.T(), "OfferToWaitlist", mock.Anything, mock.Anything)
}

// A database answer no retry can change: the payment is recorded for
// refund with PAYMENT_FAILED at once, and the order stays payable.
func (s *orderSuite) TestPermanentPaymentFailureIsRefundedAndOrderStaysOpen() {
	s.expectReserved()
	s.env.OnActivity(contract.ConfirmPayment, mock.Anything, confirmInput("t1")).Return(contract.ConfirmPaymentResult{},
		temporal.NewNonRetryableApplicationError("permanent database error: Error 4025", contract.TypeFor(flashsale.Invalid), nil)).Once()
	s.env.OnActivity(contract.RecordRefund, mock.Anything, contract.RecordRefundInput{
		OrderID: testOrderID, TransactionID: "t1", Amount: testAmount, Reason: flashsale.PaymentFailed,
	}).Return(contract.RecordRefundResult{PaymentStatus: flashsale.PaymentRefundRequired, OrderID: testOrderID}, nil).Once()
	s.env.OnActivity(contract.ConfirmPayment, mock.Anything, confirmInput("t2")).Return(captured, nil).Once()
	var first PaymentOutcome
	s.pay(time.Minute, Payment{TransactionID: "t1", Amount: testAmount}, func(o PaymentOutcome) { first = o })
	s.pay(2*time.Minute, Payment{TransactionID: "t2", Amount: testAmount}, func(PaymentOutcome) {})

	s.env.ExecuteWorkflow(s.wf, input())

	s.Equal(PaymentOutcome{OrderID: testOrderID, TransactionID: "t1", Status: flashsale.StatusPendingPayment,
		Refund: RefundRequired, Reason: flashsale.PaymentFailed}, first)
	s.Equal(flashsale.StatusPaid, s.result().Status)
}

// Compensation that cannot complete keeps retrying, shows the order STALLED
// from pay_by + stallAfter until it completes (also while the Redis release
// is still failing after MySQL closed the order), then EXPIRED.
func (s *orderSuite) TestCompensationStallIsVisibleThenCompletes() {
	start := s.env.Now()
	payBy := s.expectReserved()
	// Within the test environment's cap of 10 attempts per activity: the
	// 10th CloseOrder runs about 102 s after pay_by, the 10th ReleaseStock
	// about 204 s after.
	closeFailsUntil := payBy.Add(90 * time.Second)
	releaseFailsUntil := payBy.Add(3 * time.Minute)
	s.env.OnActivity(contract.CloseOrder, mock.Anything, mock.Anything).Return(
		func(context.Context, contract.CloseOrderInput) (contract.CloseOrderResult, error) {
			if s.env.Now().Before(closeFailsUntil) {
				return contract.CloseOrderResult{}, errors.New("lock wait timeout exceeded")
			}
			return contract.CloseOrderResult{}, nil
		})
	s.expectNobodyWaiting()
	var releasedAt time.Time
	s.env.OnActivity(contract.ReleaseStock, mock.Anything, mock.Anything).Return(
		func(context.Context, contract.ReleaseStockInput) (contract.ReleaseStockResult, error) {
			if s.env.Now().Before(releaseFailsUntil) {
				return contract.ReleaseStockResult{}, errors.New("redis: connection refused")
			}
			releasedAt = s.env.Now()
			return contract.ReleaseStockResult{Released: 1}, nil
		})
	var beforeStall, stalled, stillStalled OrderView
	offset := payBy.Sub(start)
	s.queryAt(offset+30*time.Second, &beforeStall)
	s.queryAt(offset+stallAfter+10*time.Second, &stalled)
	s.queryAt(offset+150*time.Second, &stillStalled)

	s.env.ExecuteWorkflow(s.wf, input())

	s.Equal(flashsale.StatusPendingPayment, beforeStall.Status)
	s.Equal(flashsale.StatusStalled, stalled.Status)
	s.Equal(flashsale.PaymentTimeout, stalled.Reason)
	s.Equal(flashsale.StatusStalled, stillStalled.Status, "MySQL closed the order, Redis has not the units back yet")
	s.False(flashsale.StatusStalled.Closed())
	s.False(releasedAt.Before(releaseFailsUntil))
	v := s.result()
	s.Equal(flashsale.StatusExpired, v.Status)
	s.Equal(flashsale.PaymentTimeout, v.Reason)
}

// A cancel that arrives while a payment is being applied waits for it, and
// is honoured when the payment did not pay the order.
func (s *orderSuite) TestCancelDuringSlowPayment() {
	s.expectReserved()
	s.env.OnActivity(contract.ConfirmPayment, mock.Anything, confirmInput("t1")).After(30*time.Second).
		Return(contract.ConfirmPaymentResult{}, conflictErr("t1", "o-other")).Once()
	s.expectCompensation(flashsale.StatusCancelled)
	s.env.RegisterDelayedCallback(func() {
		s.env.SignalWorkflow(SignalPayment, Payment{TransactionID: "t1", Amount: testAmount})
	}, time.Minute)
	s.env.RegisterDelayedCallback(func() {
		s.env.SignalWorkflow(SignalCancel, CancelRequest{Reason: "changed mind"})
	}, time.Minute+10*time.Second)

	s.env.ExecuteWorkflow(s.wf, input())

	v := s.result()
	s.Equal(flashsale.StatusCancelled, v.Status)
	s.Equal(flashsale.CancelledByUser, v.Reason)
	s.Equal([]PaymentOutcome{{OrderID: testOrderID, TransactionID: "t1", Status: flashsale.StatusPendingPayment,
		Conflict: true, Reason: flashsale.TransactionConflict}}, v.Payments)
}

// A cancel during a payment that cannot be applied: the payment holds the
// order until its bound, then the cancel is honoured and the payment
// refunded.
func (s *orderSuite) TestCancelDuringStuckPayment() {
	start := s.env.Now()
	payBy := s.expectReserved()
	s.env.OnActivity(contract.ConfirmPayment, mock.Anything, confirmInput("t1")).
		Return(contract.ConfirmPaymentResult{}, errors.New("driver: bad connection"))
	s.expectCompensation(flashsale.StatusCancelled)
	s.env.OnActivity(contract.RecordRefund, mock.Anything, contract.RecordRefundInput{
		OrderID: testOrderID, TransactionID: "t1", Amount: testAmount, Reason: flashsale.OrderClosed,
	}).Return(contract.RecordRefundResult{PaymentStatus: flashsale.PaymentRefundRequired, OrderID: testOrderID}, nil).Once()
	s.env.RegisterDelayedCallback(func() {
		s.env.SignalWorkflow(SignalPayment, Payment{TransactionID: "t1", Amount: testAmount})
	}, 14*time.Minute)
	s.env.RegisterDelayedCallback(func() {
		s.env.SignalWorkflow(SignalCancel, CancelRequest{})
	}, 14*time.Minute+30*time.Second)

	s.env.ExecuteWorkflow(s.wf, input())

	v := s.result()
	s.Equal(flashsale.StatusCancelled, v.Status)
	s.LessOrEqual(s.env.Now().Sub(start), payBy.Add(paymentGrace).Sub(start))
	s.Equal([]PaymentOutcome{{OrderID: testOrderID, TransactionID: "t1", Status: flashsale.StatusCancelled,
		Refund: RefundRequired, Reason: flashsale.OrderClosed}}, v.Payments)
}
