package workflows

import (
	"strings"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/activities/contract"
)

// The offer's child is an order of the same type. The test environment applies
// workflow mocks to the root as well, so the root is mocked to run the real
// workflow and only the child (the one with FromOrder) is stubbed.
func (s *orderSuite) mockOfferChild(child OrderInput) {
	s.env.OnWorkflow(s.wf, mock.Anything, mock.MatchedBy(func(in OrderInput) bool {
		return in.FromOrder == ""
	})).Return(s.wf)
	s.env.OnWorkflow(s.wf, mock.Anything, child).
		Return(OrderView{OrderSummary: OrderSummary{OrderID: child.OrderID, Status: flashsale.StatusPendingPayment}}, nil).Once()
}

func (s *orderSuite) TestReleasedUnitIsOfferedToFirstWaitingBuyer() {
	s.expectReserved()
	s.env.OnActivity(contract.CloseOrder, mock.Anything, mock.Anything).Return(contract.CloseOrderResult{}, nil).Once()
	s.env.OnActivity(contract.OfferToWaitlist, mock.Anything, contract.OfferToWaitlistInput{
		ReleasedOrderID: testOrderID, SKU: "1001",
	}).Return(contract.OfferToWaitlistResult{UserID: "u2"}, nil).Once()
	child := OrderInput{OrderID: flashsale.WaitlistOrderID(testOrderID), UserID: "u2", Items: []flashsale.Item{{SKU: "1001", Quantity: 1}}, FromOrder: testOrderID}
	s.mockOfferChild(child)
	var started workflow.Info
	s.env.SetOnChildWorkflowStartedListener(func(info *workflow.Info, _ workflow.Context, _ converter.EncodedValues) {
		started = *info
	})
	s.env.RegisterDelayedCallback(func() { s.env.SignalWorkflow(SignalCancel, CancelRequest{}) }, time.Minute)

	s.env.ExecuteWorkflow(s.wf, input())

	v := s.result()
	s.Equal(flashsale.StatusCancelled, v.Status)
	s.Equal(flashsale.WaitlistOrderID(testOrderID), v.OfferedTo)
	s.Equal(OrderWorkflowID(flashsale.WaitlistOrderID(testOrderID)), started.WorkflowExecution.ID)
	// The units went to the offer, not to open sale.
	s.env.AssertNotCalled(s.T(), "ReleaseStock", mock.Anything, mock.Anything)
}

func (s *orderSuite) TestNobodyWaitingReleasesToOpenSale() {
	s.expectReserved()
	s.expectCompensation(flashsale.StatusCancelled)
	s.env.RegisterDelayedCallback(func() { s.env.SignalWorkflow(SignalCancel, CancelRequest{}) }, time.Minute)

	s.env.ExecuteWorkflow(s.wf, input())

	v := s.result()
	s.Equal(flashsale.StatusCancelled, v.Status)
	s.Empty(v.OfferedTo)
}

// A waitlist join names no quantity, so a multi-unit release goes straight
// back to open sale without popping a waiting buyer.
func (s *orderSuite) TestMultiUnitReleaseSkipsWaitlist() {
	s.env.OnActivity(contract.ReserveStock, mock.Anything, mock.Anything).
		Return(contract.ReserveStockResult{Reservations: []flashsale.Reservation{{SKU: "1001", Quantity: 2}}}, nil).Once()
	s.env.OnActivity(contract.CreateOrder, mock.Anything, mock.Anything).
		Return(contract.CreateOrderResult{Amount: 2 * testAmount, PayBy: s.env.Now().Add(time.Minute)}, nil).Once()
	s.env.OnActivity(contract.CloseOrder, mock.Anything, mock.Anything).Return(contract.CloseOrderResult{}, nil).Once()
	s.env.OnActivity(contract.ReleaseStock, mock.Anything, contract.ReleaseStockInput{
		OrderID: testOrderID, Items: []flashsale.Item{{SKU: "1001", Quantity: 2}},
	}).Return(contract.ReleaseStockResult{Released: 2}, nil).Once()

	s.env.ExecuteWorkflow(s.wf, input(flashsale.Item{SKU: "1001", Quantity: 2}))

	s.Equal(flashsale.StatusExpired, s.result().Status)
	s.env.AssertNotCalled(s.T(), "OfferToWaitlist", mock.Anything, mock.Anything)
}

// offerInput is the order a waitlist offer starts.
func offerInput() OrderInput {
	return OrderInput{OrderID: flashsale.WaitlistOrderID(testOrderID), UserID: "u2", Items: []flashsale.Item{{SKU: "1001", Quantity: 1}}, FromOrder: testOrderID}
}

// The offer takes the released order's units over (ReserveStock with
// FromOrder); when MySQL then refuses it (the buyer is at the per-user
// limit), its compensation offers the unit to the next waiting buyer and,
// nobody waiting, releases it to open sale.
func (s *orderSuite) TestWaitlistOrderRejectedReleasesUnits() {
	in := offerInput()
	s.env.OnActivity(contract.ReserveStock, mock.Anything, contract.ReserveStockInput{
		OrderID: in.OrderID, Items: []flashsale.Item{{SKU: "1001", Quantity: 1}}, FromOrder: testOrderID, UserID: in.UserID,
	}).Return(contract.ReserveStockResult{Reservations: []flashsale.Reservation{{SKU: "1001", Quantity: 1}}}, nil).Once()
	s.env.OnActivity(contract.CreateOrder, mock.Anything, mock.Anything).Return(contract.CreateOrderResult{},
		temporal.NewNonRetryableApplicationError("limit", contract.TypeFor(flashsale.LimitExceeded), nil)).Once()
	s.env.OnActivity(contract.OfferToWaitlist, mock.Anything, contract.OfferToWaitlistInput{
		ReleasedOrderID: in.OrderID, SKU: "1001",
	}).Return(contract.OfferToWaitlistResult{}, nil).Once()
	s.env.OnActivity(contract.ReleaseStock, mock.Anything, contract.ReleaseStockInput{
		OrderID: in.OrderID, Items: []flashsale.Item{{SKU: "1001", Quantity: 1}}, FromOrder: testOrderID,
	}).Return(contract.ReleaseStockResult{Released: 1}, nil).Once()
	var answered Reservation
	s.reserve(func(r Reservation) { answered = r })

	s.env.ExecuteWorkflow(s.wf, in)

	v := s.result()
	s.Equal(flashsale.StatusRejected, v.Status)
	s.Equal(flashsale.LimitExceeded, v.Reason)
	s.Equal(testOrderID, v.FromOrder)
	s.Equal(flashsale.StatusRejected, answered.Status)
}

// An offer refused because its buyer already holds the limit passes the
// unit to the next waiting buyer (not to open sale, where the
// buyers still waiting were passed over).
func (s *orderSuite) TestRejectedOfferGoesToNextWaiter() {
	in := offerInput()
	s.env.OnActivity(contract.ReserveStock, mock.Anything, mock.Anything).
		Return(contract.ReserveStockResult{Reservations: []flashsale.Reservation{{SKU: "1001", Quantity: 1}}}, nil).Once()
	s.env.OnActivity(contract.CreateOrder, mock.Anything, mock.Anything).Return(contract.CreateOrderResult{},
		temporal.NewNonRetryableApplicationError("limit", contract.TypeFor(flashsale.LimitExceeded), nil)).Once()
	s.env.OnActivity(contract.OfferToWaitlist, mock.Anything, contract.OfferToWaitlistInput{
		ReleasedOrderID: in.OrderID, SKU: "1001",
	}).Return(contract.OfferToWaitlistResult{UserID: "u3"}, nil).Once()
	next := OrderInput{OrderID: flashsale.WaitlistOrderID(in.OrderID), UserID: "u3",
		Items: []flashsale.Item{{SKU: "1001", Quantity: 1}}, FromOrder: in.OrderID}
	s.env.OnWorkflow(s.wf, mock.Anything, in).Return(s.wf)
	s.env.OnWorkflow(s.wf, mock.Anything, next).
		Return(OrderView{OrderSummary: OrderSummary{OrderID: next.OrderID, Status: flashsale.StatusPendingPayment}}, nil).Once()

	s.env.ExecuteWorkflow(s.wf, in)

	v := s.result()
	s.Equal(flashsale.StatusRejected, v.Status)
	s.Equal(flashsale.LimitExceeded, v.Reason)
	s.Equal(next.OrderID, v.OfferedTo)
	s.env.AssertNotCalled(s.T(), "ReleaseStock", mock.Anything, mock.Anything)
}

// A rejection for any other reason (here the id taken by another order)
// is not a unit on its way to a waiting buyer: it goes back on open sale.
func (s *orderSuite) TestOrderIDConflictReleasesUnits() {
	s.env.OnActivity(contract.ReserveStock, mock.Anything, mock.Anything).
		Return(contract.ReserveStockResult{Reservations: []flashsale.Reservation{{SKU: "1001", Quantity: 1}}}, nil).Once()
	s.env.OnActivity(contract.CreateOrder, mock.Anything, mock.Anything).Return(contract.CreateOrderResult{},
		temporal.NewNonRetryableApplicationError("taken", contract.TypeFor(flashsale.OrderIDConflict), nil)).Once()
	s.env.OnActivity(contract.ReleaseStock, mock.Anything, mock.Anything).
		Return(contract.ReleaseStockResult{Released: 1}, nil).Once()

	s.env.ExecuteWorkflow(s.wf, input())

	v := s.result()
	s.Equal(flashsale.StatusRejected, v.Status)
	s.Equal(flashsale.OrderIDConflict, v.Reason)
	s.env.AssertNotCalled(s.T(), "OfferToWaitlist", mock.Anything, mock.Anything)
}

// The offer is paid like any order: nothing is released.
func (s *orderSuite) TestWaitlistOrderPaid() {
	in := offerInput()
	s.env.OnActivity(contract.ReserveStock, mock.Anything, mock.MatchedBy(func(r contract.ReserveStockInput) bool {
		return r.FromOrder == testOrderID
	})).Return(contract.ReserveStockResult{Reservations: []flashsale.Reservation{{SKU: "1001", Quantity: 1}}}, nil).Once()
	s.env.OnActivity(contract.CreateOrder, mock.Anything, mock.Anything).
		Return(contract.CreateOrderResult{Amount: testAmount, PayBy: s.env.Now().Add(15 * time.Minute)}, nil).Once()
	s.env.OnActivity(contract.ConfirmPayment, mock.Anything, mock.Anything).
		Return(contract.ConfirmPaymentResult{OrderStatus: flashsale.StatusPaid, PaymentStatus: flashsale.PaymentCaptured}, nil).Once()
	s.pay(time.Minute, Payment{TransactionID: "t-wl", Amount: testAmount}, func(PaymentOutcome) {})

	s.env.ExecuteWorkflow(s.wf, in)

	s.Equal(flashsale.StatusPaid, s.result().Status)
	s.env.AssertNotCalled(s.T(), "ReleaseStock", mock.Anything, mock.Anything)
}

func (s *orderSuite) TestWaitlistOrderID() {
	short := flashsale.WaitlistOrderID("A1")
	s.Len(short, len(flashsale.WaitlistOrderPrefix)+32, "a digest, never the raw id")
	long := flashsale.WaitlistOrderID(strings.Repeat("x", flashsale.MaxIDLength))
	s.Len(long, len(short))
	s.Equal(long, flashsale.WaitlistOrderID(strings.Repeat("x", flashsale.MaxIDLength)), "deterministic")
	s.NotEqual(long, flashsale.WaitlistOrderID(strings.Repeat("y", flashsale.MaxIDLength)))
	// A raw id of the digest's length does not name the digest's offer.
	x := strings.Repeat("x", 62)
	y := strings.TrimPrefix(flashsale.WaitlistOrderID(x), flashsale.WaitlistOrderPrefix)
	s.NotEqual(flashsale.WaitlistOrderID(x), flashsale.WaitlistOrderID(y))
}
