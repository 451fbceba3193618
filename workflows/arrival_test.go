package workflows

import (
	"errors"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/temporal"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/activities/contract"
)

// Tests of paymentArrivalChangeID: a payment is judged by when our door
// received it, so money taken in time is never lost to a workflow task that
// got to it a moment late, and money taken late never keeps the unit.

// signalPayment delivers p as the payment signal after d of workflow time.
func (s *orderSuite) signalPayment(d time.Duration, p Payment) {
	s.env.RegisterDelayedCallback(func() { s.env.SignalWorkflow(SignalPayment, p) }, d)
}

// Received a second before the deadline, delivered two seconds after it
// (the order's workflow task was busy): the buyer paid in time, the order
// is PAID and nothing goes back on sale.
func (s *orderSuite) TestPaymentReceivedInTimeButDeliveredLateIsPaid() {
	start := s.env.Now()
	payBy := s.expectReserved()
	s.env.OnActivity(contract.ConfirmPayment, mock.Anything, confirmInput("t1")).Return(captured, nil).Once()
	s.signalPayment(payBy.Sub(start)+2*time.Second,
		Payment{TransactionID: "t1", Amount: testAmount, ReceivedAt: payBy.Add(-time.Second)})

	s.env.ExecuteWorkflow(s.wf, input())

	v := s.result()
	s.Equal(flashsale.StatusPaid, v.Status)
	s.Equal([]PaymentOutcome{{OrderID: testOrderID, TransactionID: "t1", Status: flashsale.StatusPaid}}, v.Payments)
	s.env.AssertNotCalled(s.T(), "CloseOrder", mock.Anything, mock.Anything)
	s.env.AssertNotCalled(s.T(), "ReleaseStock", mock.Anything, mock.Anything)
	s.env.AssertNotCalled(s.T(), "RecordRefund", mock.Anything, mock.Anything)
}

// The same in-time payment delivered through the update: answered PAID.
func (s *orderSuite) TestPayUpdateReceivedInTimeButDeliveredLateIsPaid() {
	start := s.env.Now()
	payBy := s.expectReserved()
	s.env.OnActivity(contract.ConfirmPayment, mock.Anything, confirmInput("t1")).Return(captured, nil).Once()
	var out PaymentOutcome
	s.pay(payBy.Sub(start)+arrivalGrace-time.Second,
		Payment{TransactionID: "t1", Amount: testAmount, ReceivedAt: payBy.Add(-time.Millisecond)},
		func(o PaymentOutcome) { out = o })

	s.env.ExecuteWorkflow(s.wf, input())

	s.Equal(PaymentOutcome{OrderID: testOrderID, TransactionID: "t1", Status: flashsale.StatusPaid}, out)
	s.Equal(flashsale.StatusPaid, s.result().Status)
}

// Received after the deadline: the order closes at once (not at the end of
// the grace), the money is recorded for refund and no unit is sold.
func (s *orderSuite) TestPaymentReceivedAfterDeadlineClosesTheOrderAtOnce() {
	start := s.env.Now()
	payBy := s.expectReserved()
	var closedAt time.Time
	s.expectExpiry(&closedAt)
	s.env.OnActivity(contract.RecordRefund, mock.Anything, contract.RecordRefundInput{
		OrderID: testOrderID, TransactionID: "late", Amount: testAmount, Reason: flashsale.OrderClosed,
	}).Return(contract.RecordRefundResult{PaymentStatus: flashsale.PaymentRefundRequired, OrderID: testOrderID}, nil).Once()
	var out PaymentOutcome
	s.pay(payBy.Sub(start)+time.Second,
		Payment{TransactionID: "late", Amount: testAmount, ReceivedAt: payBy.Add(time.Second)},
		func(o PaymentOutcome) { out = o })

	s.env.ExecuteWorkflow(s.wf, input())

	refunded := PaymentOutcome{OrderID: testOrderID, TransactionID: "late", Status: flashsale.StatusExpired,
		Refund: RefundRequired, Reason: flashsale.OrderClosed}
	s.Equal(refunded, out)
	s.Equal(flashsale.StatusExpired, s.result().Status)
	s.Equal(payBy.Add(time.Second).Sub(start), closedAt.Sub(start), "closed when the late money came")
	s.env.AssertNotCalled(s.T(), "ConfirmPayment", mock.Anything, mock.Anything)
}

// Nothing paid: the order waits the arrival grace past pay_by for money
// still on its way, then expires.
func (s *orderSuite) TestUnpaidOrderExpiresAfterTheArrivalGrace() {
	start := s.env.Now()
	payBy := s.expectReserved()
	var closedAt time.Time
	s.expectExpiry(&closedAt)
	var during OrderView
	s.queryAt(payBy.Sub(start)+arrivalGrace/2, &during)

	s.env.ExecuteWorkflow(s.wf, input())

	s.Equal(flashsale.StatusPendingPayment, during.Status, "still open inside the grace")
	s.Equal(flashsale.StatusExpired, s.result().Status)
	s.Equal(payBy.Add(arrivalGrace).Sub(start), closedAt.Sub(start))
}

// The API's pay update timed out while the order was busy, so it signalled
// the same payment too: applied once, answered once, listed once.
func (s *orderSuite) TestSamePaymentByUpdateAndSignalIsAppliedOnce() {
	s.expectReserved()
	// The first attempt's answer is slow (a lost reply): the update waits,
	// and the signal arrives meanwhile.
	s.env.OnActivity(contract.ConfirmPayment, mock.Anything, confirmInput("t1")).After(10*time.Second).Return(captured, nil).Once()
	p := Payment{TransactionID: "t1", Amount: testAmount, ReceivedAt: s.env.Now().Add(time.Minute)}
	var out PaymentOutcome
	s.pay(time.Minute, p, func(o PaymentOutcome) { out = o })
	s.signalPayment(time.Minute+2*time.Second, p)

	s.env.ExecuteWorkflow(s.wf, input())

	s.Equal(PaymentOutcome{OrderID: testOrderID, TransactionID: "t1", Status: flashsale.StatusPaid}, out)
	v := s.result()
	s.Equal(flashsale.StatusPaid, v.Status)
	s.Len(v.Payments, 1)
	s.env.AssertNumberOfCalls(s.T(), "ConfirmPayment", 1)
	s.env.AssertNotCalled(s.T(), "RecordRefund", mock.Anything, mock.Anything)
}

// closeFindsReceipt mocks the expiry's CloseOrder finding an unanswered
// receipt of txn, received at: it refuses to close.
func (s *orderSuite) closeFindsReceipt(txn string, at time.Time) {
	s.env.OnActivity(contract.CloseOrder, mock.Anything, contract.CloseOrderInput{
		OrderID: testOrderID, Status: flashsale.StatusExpired, Reason: flashsale.PaymentTimeout,
	}).Return(contract.CloseOrderResult{}, temporal.NewNonRetryableApplicationError("received",
		contract.TypeFor(flashsale.PaymentReceived), nil, contract.PaymentReceivedDetails{
			TransactionID: txn, Amount: testAmount, ReceivedAt: at,
		})).Once()
}

// Money our door received a second before the deadline never reached the
// order (Temporal could not deliver it): CloseOrder finds the receipt and
// refuses, and the order applies the payment instead of expiring.
func (s *orderSuite) TestPaymentFoundAtCloseIsApplied() {
	payBy := s.expectReserved()
	s.closeFindsReceipt("t-lost", payBy.Add(-time.Second))
	s.env.OnActivity(contract.ConfirmPayment, mock.Anything, confirmInput("t-lost")).Return(captured, nil).Once()

	s.env.ExecuteWorkflow(s.wf, input())

	v := s.result()
	s.Equal(flashsale.StatusPaid, v.Status)
	s.Equal([]PaymentOutcome{{OrderID: testOrderID, TransactionID: "t-lost", Status: flashsale.StatusPaid}}, v.Payments)
	s.env.AssertNotCalled(s.T(), "ReleaseStock", mock.Anything, mock.Anything)
	s.env.AssertNotCalled(s.T(), "OfferToWaitlist", mock.Anything, mock.Anything)
}

// The payment found at close cannot be applied (the database does not
// answer by its bound): the order closes ignoring receipts, and the
// payment, still the order's, is settled late.
func (s *orderSuite) TestPaymentFoundAtCloseButNotAppliedStillCloses() {
	payBy := s.expectReserved()
	s.closeFindsReceipt("t-stuck", payBy.Add(-time.Second))
	s.env.OnActivity(contract.ConfirmPayment, mock.Anything, confirmInput("t-stuck")).
		Return(contract.ConfirmPaymentResult{}, errors.New("driver: bad connection"))
	s.env.OnActivity(contract.CloseOrder, mock.Anything, contract.CloseOrderInput{
		OrderID: testOrderID, Status: flashsale.StatusExpired, Reason: flashsale.PaymentTimeout, IgnoreReceipts: true,
	}).Return(contract.CloseOrderResult{}, nil).Once()
	s.expectNobodyWaiting()
	s.env.OnActivity(contract.ReleaseStock, mock.Anything, mock.Anything).Return(contract.ReleaseStockResult{Released: 1}, nil).Once()
	s.env.OnActivity(contract.RecordRefund, mock.Anything, contract.RecordRefundInput{
		OrderID: testOrderID, TransactionID: "t-stuck", Amount: testAmount, Reason: flashsale.OrderClosed,
	}).Return(contract.RecordRefundResult{PaymentStatus: flashsale.PaymentRefundRequired, OrderID: testOrderID}, nil).Once()

	s.env.ExecuteWorkflow(s.wf, input())

	v := s.result()
	s.Equal(flashsale.StatusExpired, v.Status)
	s.Require().Len(v.Payments, 1)
	s.Equal(RefundRequired, v.Payments[0].Refund)
}
