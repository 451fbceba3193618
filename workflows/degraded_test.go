package workflows

import (
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/temporal"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/activities/contract"
)

// expectDegraded mocks ReserveStock answering "Redis down": the order is
// written by CreateOrder in degraded mode, which returns created (or err).
func (s *orderSuite) expectDegraded(created contract.CreateOrderResult, err error) {
	s.env.OnActivity(contract.ReserveStock, mock.Anything, mock.Anything).
		Return(contract.ReserveStockResult{Degraded: true, DegradedReason: "redis unreachable"}, nil).Once()
	s.env.OnActivity(contract.CreateOrder, mock.Anything, contract.CreateOrderInput{
		Order:    flashsale.Order{OrderID: testOrderID, UserID: "u1", Items: []flashsale.Item{{SKU: "1001", Quantity: 1}}},
		Degraded: true,
	}).Return(created, err).Once()
}

// A degraded order that expires: MySQL releases its units (and flags the
// SKU for the resync that puts them on sale); the waitlist is not offered
// units Redis never had taken; the Redis release only returns what an
// earlier attempt may have taken.
func (s *orderSuite) TestDegradedOrderExpires() {
	s.expectDegraded(contract.CreateOrderResult{Amount: testAmount, PayBy: s.env.Now().Add(15 * time.Minute).UTC()}, nil)
	s.env.OnActivity(contract.CloseOrder, mock.Anything, contract.CloseOrderInput{
		OrderID: testOrderID, Status: flashsale.StatusExpired, Reason: flashsale.PaymentTimeout,
	}).Return(contract.CloseOrderResult{}, nil).Once()
	s.env.OnActivity(contract.ReleaseStock, mock.Anything, mock.Anything).Return(contract.ReleaseStockResult{}, nil).Once()
	var answered Reservation
	s.reserve(func(r Reservation) { answered = r })

	s.env.ExecuteWorkflow(s.wf, input())

	s.Equal(flashsale.StatusPendingPayment, answered.Status)
	v := s.result()
	s.Equal(flashsale.StatusExpired, v.Status)
	s.True(v.Degraded)
	s.env.AssertNotCalled(s.T(), "OfferToWaitlist", mock.Anything, mock.Anything)
}

// A degraded order is paid like any other.
func (s *orderSuite) TestDegradedOrderPaid() {
	s.expectDegraded(contract.CreateOrderResult{Amount: testAmount, PayBy: s.env.Now().Add(15 * time.Minute).UTC()}, nil)
	s.env.OnActivity(contract.ConfirmPayment, mock.Anything, mock.Anything).
		Return(contract.ConfirmPaymentResult{OrderStatus: flashsale.StatusPaid, PaymentStatus: flashsale.PaymentCaptured}, nil).Once()
	s.env.RegisterDelayedCallback(func() {
		s.env.SignalWorkflow(SignalPayment, Payment{TransactionID: "t1", Amount: testAmount})
	}, time.Minute)

	s.env.ExecuteWorkflow(s.wf, input())

	v := s.result()
	s.Equal(flashsale.StatusPaid, v.Status)
	s.True(v.Degraded)
	s.env.AssertNotCalled(s.T(), "ReleaseStock", mock.Anything, mock.Anything)
}

// MySQL alone says sold out: the buyer is answered SOLD_OUT before the
// Redis release, which may have to wait for Redis to come back.
func (s *orderSuite) TestDegradedSoldOutAnswersBeforeRelease() {
	s.expectDegraded(contract.CreateOrderResult{},
		temporal.NewNonRetryableApplicationError("sku 1001: want 1, available 0", contract.TypeFor(flashsale.SoldOut), nil))
	// Redis is still down for the first attempts of the release.
	s.env.OnActivity(contract.ReleaseStock, mock.Anything, mock.Anything).
		Return(contract.ReleaseStockResult{}, temporal.NewApplicationError("dial tcp: connection refused", "")).Times(3)
	s.env.OnActivity(contract.ReleaseStock, mock.Anything, mock.Anything).Return(contract.ReleaseStockResult{}, nil).Once()
	var answered Reservation
	var answeredAt, start time.Time
	start = s.env.Now()
	s.reserve(func(r Reservation) { answered = r; answeredAt = s.env.Now() })

	s.env.ExecuteWorkflow(s.wf, input())

	s.Equal(Reservation{OrderID: testOrderID, Status: flashsale.StatusRejected, Reason: flashsale.SoldOut}, answered)
	s.Equal(start, answeredAt, "answered before the release's retries")
	v := s.result()
	s.Equal(flashsale.StatusRejected, v.Status)
	s.Equal(flashsale.SoldOut, v.Reason)
	s.Less(start, s.env.Now(), "the release retried until Redis answered")
}

// A degraded order over the buyer's limit is rejected LIMIT_EXCEEDED, not
// as drift: Redis took nothing.
func (s *orderSuite) TestDegradedLimitExceeded() {
	s.expectDegraded(contract.CreateOrderResult{},
		temporal.NewNonRetryableApplicationError("limit", contract.TypeFor(flashsale.LimitExceeded), nil))
	s.env.OnActivity(contract.ReleaseStock, mock.Anything, mock.Anything).Return(contract.ReleaseStockResult{}, nil).Once()

	s.env.ExecuteWorkflow(s.wf, input())

	v := s.result()
	s.Equal(flashsale.StatusRejected, v.Status)
	s.Equal(flashsale.LimitExceeded, v.Reason)
}
