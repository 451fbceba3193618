package workflows

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"github.com/stretchr/testify/suite"
	sdkpb "go.temporal.io/api/sdk/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/activities"
	"github.com/flashsale/flashsale/activities/contract"
)

const (
	testOrderID = "o-1"
	testAmount  = int64(129900)
)

type orderSuite struct {
	suite.Suite
	testsuite.WorkflowTestSuite
	env *testsuite.TestWorkflowEnvironment
	// wf is the order's workflow type under test.
	wf func(workflow.Context, OrderInput) (OrderView, error)
}

func TestOrderWorkflow(t *testing.T) { suite.Run(t, &orderSuite{wf: OrderWorkflow}) }

func (s *orderSuite) SetupTest() {
	s.env = s.NewTestWorkflowEnvironment()
	s.env.RegisterActivity(&activities.Activities{})
}

func (s *orderSuite) AfterTest(_, _ string) { s.env.AssertExpectations(s.T()) }

func input(items ...flashsale.Item) OrderInput {
	if len(items) == 0 {
		items = []flashsale.Item{{SKU: "1001", Quantity: 1}}
	}
	return OrderInput{OrderID: testOrderID, UserID: "u1", Items: items}
}

// expectReserved mocks a successful reservation and order write whose
// deadline is 15 minutes after the test clock's start.
func (s *orderSuite) expectReserved() time.Time {
	payBy := s.env.Now().Add(15 * time.Minute).UTC()
	s.env.OnActivity(contract.ReserveStock, mock.Anything, mock.Anything).
		Return(contract.ReserveStockResult{Reservations: []flashsale.Reservation{{SKU: "1001", Quantity: 1}}}, nil).Once()
	s.env.OnActivity(contract.CreateOrder, mock.Anything, mock.Anything).
		Return(contract.CreateOrderResult{Amount: testAmount, PayBy: payBy}, nil).Once()
	return payBy
}

// expectNobodyWaiting mocks an empty waitlist: the compensation releases
// the units to open sale.
func (s *orderSuite) expectNobodyWaiting() {
	s.env.OnActivity(contract.OfferToWaitlist, mock.Anything, contract.OfferToWaitlistInput{
		ReleasedOrderID: testOrderID, SKU: "1001",
	}).Return(contract.OfferToWaitlistResult{}, nil).Once()
}

func (s *orderSuite) expectCompensation(status flashsale.Status) {
	s.expectNobodyWaiting()
	s.env.OnActivity(contract.CloseOrder, mock.Anything, contract.CloseOrderInput{
		OrderID: testOrderID, Status: status, Reason: map[flashsale.Status]flashsale.Code{
			flashsale.StatusExpired: flashsale.PaymentTimeout, flashsale.StatusCancelled: flashsale.CancelledByUser,
		}[status],
	}).Return(contract.CloseOrderResult{}, nil).Once()
	s.env.OnActivity(contract.ReleaseStock, mock.Anything, contract.ReleaseStockInput{
		OrderID: testOrderID, Items: []flashsale.Item{{SKU: "1001", Quantity: 1}},
	}).Return(contract.ReleaseStockResult{Released: 1}, nil).Once()
}

// reserve sends the UpdateReserve a buyer's Update-with-Start carries and
// checks the answer when it comes.
func (s *orderSuite) reserve(check func(Reservation)) {
	s.env.RegisterDelayedCallback(func() {
		s.env.UpdateWorkflow(UpdateReserve, "reserve", &testsuite.TestUpdateCallback{
			OnReject: func(err error) { s.Fail("reserve rejected", err) },
			OnAccept: func() {},
			OnComplete: func(v any, err error) {
				s.Require().NoError(err)
				check(v.(Reservation))
			},
		}, ReserveRequest{})
	}, 0)
}

func (s *orderSuite) pay(after time.Duration, p Payment, check func(PaymentOutcome)) {
	s.env.RegisterDelayedCallback(func() {
		s.env.UpdateWorkflow(UpdatePay, "pay-"+p.TransactionID, &testsuite.TestUpdateCallback{
			OnReject: func(err error) { s.Fail("pay rejected", err) },
			OnAccept: func() {},
			OnComplete: func(v any, err error) {
				s.Require().NoError(err)
				check(v.(PaymentOutcome))
			},
		}, p)
	}, after)
}

func (s *orderSuite) result() OrderView {
	s.Require().True(s.env.IsWorkflowCompleted())
	s.Require().NoError(s.env.GetWorkflowError())
	var v OrderView
	s.Require().NoError(s.env.GetWorkflowResult(&v))
	return v
}

func (s *orderSuite) TestPaidOrder() {
	payBy := s.expectReserved()
	s.env.OnActivity(contract.ConfirmPayment, mock.Anything, contract.ConfirmPaymentInput{
		OrderID: testOrderID, TransactionID: "t1", Amount: testAmount,
	}).Return(contract.ConfirmPaymentResult{OrderStatus: flashsale.StatusPaid, PaymentStatus: flashsale.PaymentCaptured}, nil).Once()

	var answered Reservation
	s.reserve(func(r Reservation) { answered = r })
	var outcome PaymentOutcome
	s.pay(3*time.Minute, Payment{TransactionID: "t1", Amount: testAmount}, func(o PaymentOutcome) { outcome = o })

	s.env.ExecuteWorkflow(s.wf, input())

	s.Equal(Reservation{OrderID: testOrderID, Status: flashsale.StatusPendingPayment, Amount: testAmount, PayBy: payBy}, answered)
	s.Equal(PaymentOutcome{OrderID: testOrderID, TransactionID: "t1", Status: flashsale.StatusPaid}, outcome)
	v := s.result()
	s.Equal(flashsale.StatusPaid, v.Status)
	s.Equal(testAmount, v.Amount)
}

func (s *orderSuite) TestPaymentTimeout() {
	start := s.env.Now()
	s.expectReserved()
	s.expectCompensation(flashsale.StatusExpired)

	s.env.ExecuteWorkflow(s.wf, input())

	v := s.result()
	s.Equal(flashsale.StatusExpired, v.Status)
	s.Equal(flashsale.PaymentTimeout, v.Reason)
	// Time skipping ran the whole 15-minute deadline.
	s.GreaterOrEqual(s.env.Now().Sub(start), 15*time.Minute)
}

func (s *orderSuite) TestBuyerCancels() {
	s.expectReserved()
	s.expectCompensation(flashsale.StatusCancelled)
	s.env.RegisterDelayedCallback(func() {
		s.env.SignalWorkflow(SignalCancel, CancelRequest{Reason: "changed mind"})
	}, 2*time.Minute)

	s.env.ExecuteWorkflow(s.wf, input())

	s.Equal(flashsale.StatusCancelled, s.result().Status)
}

func (s *orderSuite) TestOperatorCancelsWorkflow() {
	s.expectReserved()
	s.env.OnActivity(contract.CloseOrder, mock.Anything, mock.MatchedBy(func(in contract.CloseOrderInput) bool {
		return in.Status == flashsale.StatusCancelled
	})).Return(contract.CloseOrderResult{}, nil).Once()
	s.expectNobodyWaiting()
	s.env.OnActivity(contract.ReleaseStock, mock.Anything, mock.Anything).Return(contract.ReleaseStockResult{Released: 1}, nil).Once()
	s.env.RegisterDelayedCallback(s.env.CancelWorkflow, time.Minute)

	s.env.ExecuteWorkflow(s.wf, input())

	s.Equal(flashsale.StatusCancelled, s.result().Status)
}

// A payment signal landing exactly on the deadline must end in exactly one
// of two consistent states: paid with nothing released, or expired with the
// units released and the money recorded for refund.
func (s *orderSuite) TestPaymentRacesDeadline() {
	s.expectReserved()
	confirm := s.env.OnActivity(contract.ConfirmPayment, mock.Anything, mock.Anything).
		Return(contract.ConfirmPaymentResult{OrderStatus: flashsale.StatusPaid, PaymentStatus: flashsale.PaymentCaptured}, nil).Maybe()
	closeOrder := s.env.OnActivity(contract.CloseOrder, mock.Anything, mock.Anything).Return(contract.CloseOrderResult{}, nil).Maybe()
	s.env.OnActivity(contract.OfferToWaitlist, mock.Anything, mock.Anything).Return(contract.OfferToWaitlistResult{}, nil).Maybe()
	s.env.OnActivity(contract.ReleaseStock, mock.Anything, mock.Anything).Return(contract.ReleaseStockResult{Released: 1}, nil).Maybe()
	refund := s.env.OnActivity(contract.RecordRefund, mock.Anything, mock.Anything).Return(contract.RecordRefundResult{}, nil).Maybe()
	s.env.RegisterDelayedCallback(func() {
		s.env.SignalWorkflow(SignalPayment, Payment{TransactionID: "t-edge", Amount: testAmount})
	}, 15*time.Minute)

	s.env.ExecuteWorkflow(s.wf, input())

	v := s.result()
	switch v.Status {
	case flashsale.StatusPaid:
		s.env.AssertNumberOfCalls(s.T(), "ConfirmPayment", 1)
		s.env.AssertNotCalled(s.T(), "CloseOrder", mock.Anything, mock.Anything)
		s.env.AssertNotCalled(s.T(), "RecordRefund", mock.Anything, mock.Anything)
	case flashsale.StatusExpired:
		s.env.AssertNotCalled(s.T(), "ConfirmPayment", mock.Anything, mock.Anything)
		s.env.AssertNumberOfCalls(s.T(), "CloseOrder", 1)
		s.env.AssertNumberOfCalls(s.T(), "RecordRefund", 1)
		s.Require().Len(v.Payments, 1)
		s.Equal(RefundRequired, v.Payments[0].Refund)
	default:
		s.Failf("unexpected status", "%s", v.Status)
	}
	_, _, _ = confirm, closeOrder, refund
}

func (s *orderSuite) TestDuplicateAndSecondPayment() {
	s.expectReserved()
	s.env.OnActivity(contract.ConfirmPayment, mock.Anything, mock.Anything).
		Return(contract.ConfirmPaymentResult{OrderStatus: flashsale.StatusPaid, PaymentStatus: flashsale.PaymentCaptured}, nil).Once()
	s.env.OnActivity(contract.RecordRefund, mock.Anything, contract.RecordRefundInput{
		OrderID: testOrderID, TransactionID: "t2", Amount: testAmount, Reason: flashsale.AlreadyPaid,
	}).Return(contract.RecordRefundResult{}, nil).Once()

	for _, txn := range []string{"t1", "t1", "t2", "t1"} {
		s.env.RegisterDelayedCallback(func() {
			s.env.SignalWorkflow(SignalPayment, Payment{TransactionID: txn, Amount: testAmount})
		}, time.Minute)
	}
	s.env.ExecuteWorkflow(s.wf, input())

	v := s.result()
	s.Equal(flashsale.StatusPaid, v.Status)
	s.Require().Len(v.Payments, 2)
	s.Equal("", v.Payments[0].Refund)
	s.Equal(RefundRequired, v.Payments[1].Refund)
}

func (s *orderSuite) TestAmountMismatchIsRefundedAndOrderStaysOpen() {
	s.expectReserved()
	s.env.OnActivity(contract.RecordRefund, mock.Anything, contract.RecordRefundInput{
		OrderID: testOrderID, TransactionID: "short", Amount: 1, Reason: flashsale.AmountMismatch,
	}).Return(contract.RecordRefundResult{}, nil).Once()
	s.env.OnActivity(contract.ConfirmPayment, mock.Anything, mock.Anything).
		Return(contract.ConfirmPaymentResult{OrderStatus: flashsale.StatusPaid, PaymentStatus: flashsale.PaymentCaptured}, nil).Once()

	var first PaymentOutcome
	s.pay(time.Minute, Payment{TransactionID: "short", Amount: 1}, func(o PaymentOutcome) { first = o })
	s.pay(2*time.Minute, Payment{TransactionID: "good", Amount: testAmount}, func(PaymentOutcome) {})
	s.env.ExecuteWorkflow(s.wf, input())

	s.Equal(RefundRequired, first.Refund)
	s.Equal(flashsale.AmountMismatch, first.Reason)
	s.Equal(flashsale.StatusPendingPayment, first.Status)
	s.Equal(flashsale.StatusPaid, s.result().Status)
}

// A payment that arrives while the expired order is being compensated is
// recorded for refund, not lost and not sold.
func (s *orderSuite) TestLatePaymentDuringCompensation() {
	s.expectReserved()
	s.env.OnActivity(contract.CloseOrder, mock.Anything, mock.Anything).
		After(30*time.Second).Return(contract.CloseOrderResult{}, nil).Once()
	s.expectNobodyWaiting()
	s.env.OnActivity(contract.ReleaseStock, mock.Anything, mock.Anything).Return(contract.ReleaseStockResult{Released: 1}, nil).Once()
	s.env.OnActivity(contract.RecordRefund, mock.Anything, contract.RecordRefundInput{
		OrderID: testOrderID, TransactionID: "late", Amount: testAmount, Reason: flashsale.OrderClosed,
	}).Return(contract.RecordRefundResult{}, nil).Once()
	s.env.RegisterDelayedCallback(func() {
		s.env.SignalWorkflow(SignalPayment, Payment{TransactionID: "late", Amount: testAmount})
	}, 15*time.Minute+10*time.Second)

	s.env.ExecuteWorkflow(s.wf, input())

	v := s.result()
	s.Equal(flashsale.StatusExpired, v.Status)
	s.Require().Len(v.Payments, 1)
	s.Equal(PaymentOutcome{OrderID: testOrderID, TransactionID: "late", Status: flashsale.StatusExpired,
		Refund: RefundRequired, Reason: flashsale.OrderClosed}, v.Payments[0])
	s.env.AssertNotCalled(s.T(), "ConfirmPayment", mock.Anything, mock.Anything)
}

func (s *orderSuite) TestSoldOutIsRejectedWithoutOrderRow() {
	s.env.OnActivity(contract.ReserveStock, mock.Anything, mock.Anything).Return(contract.ReserveStockResult{},
		temporal.NewNonRetryableApplicationError("1001: sold out", contract.TypeFor(flashsale.SoldOut), nil)).Once()
	var answered Reservation
	s.reserve(func(r Reservation) { answered = r })

	s.env.ExecuteWorkflow(s.wf, input())

	s.Equal(Reservation{OrderID: testOrderID, Status: flashsale.StatusRejected, Reason: flashsale.SoldOut}, answered)
	s.Equal(flashsale.StatusRejected, s.result().Status)
	s.env.AssertNotCalled(s.T(), "CreateOrder", mock.Anything, mock.Anything)
}

// Redis's count refused the buyer (over the SKU's per-buyer limit):
// ReserveStock took nothing and gets the buyer id to count against, so the
// order is rejected LIMIT_EXCEEDED with nothing to undo and no MySQL row.
func (s *orderSuite) TestLimitAtReserveIsRejectedWithoutUndo() {
	in := input()
	s.env.OnActivity(contract.ReserveStock, mock.Anything, contract.ReserveStockInput{
		OrderID: in.OrderID, Items: in.Items, UserID: in.UserID,
	}).Return(contract.ReserveStockResult{},
		temporal.NewNonRetryableApplicationError("1001: limit", contract.TypeFor(flashsale.LimitExceeded), nil)).Once()
	var answered Reservation
	s.reserve(func(r Reservation) { answered = r })

	s.env.ExecuteWorkflow(s.wf, in)

	s.Equal(Reservation{OrderID: testOrderID, Status: flashsale.StatusRejected, Reason: flashsale.LimitExceeded}, answered)
	s.Equal(flashsale.StatusRejected, s.result().Status)
	s.env.AssertNotCalled(s.T(), "CreateOrder", mock.Anything, mock.Anything)
	s.env.AssertNotCalled(s.T(), "ReleaseStock", mock.Anything, mock.Anything)
}

// MySQL refused one SKU (Redis drifted): that SKU's Redis units must not be
// put back, the other item's must.
func (s *orderSuite) TestMySQLRefusalKeepsDriftedUnitsOutOfRedis() {
	s.env.OnActivity(contract.ReserveStock, mock.Anything, mock.Anything).Return(contract.ReserveStockResult{}, nil).Once()
	s.env.OnActivity(contract.CreateOrder, mock.Anything, mock.Anything).Return(contract.CreateOrderResult{},
		temporal.NewNonRetryableApplicationError("insufficient stock", contract.TypeFor(flashsale.StockDrift), nil,
			contract.StockDriftDetails{DriftedSKUs: []string{"2002"}})).Once()
	s.env.OnActivity(contract.ReleaseStock, mock.Anything, contract.ReleaseStockInput{
		OrderID: testOrderID, Items: []flashsale.Item{{SKU: "1001", Quantity: 1}},
	}).Return(contract.ReleaseStockResult{Released: 1}, nil).Once()

	s.env.ExecuteWorkflow(s.wf, input(flashsale.Item{SKU: "1001", Quantity: 1}, flashsale.Item{SKU: "2002", Quantity: 2}))

	v := s.result()
	s.Equal(flashsale.StatusRejected, v.Status)
	s.Equal(flashsale.StockDrift, v.Reason)
}

// MySQL refused the order for the buyer's per-user limit: the Redis units are
// real, so every item goes back, and the buyer is told LIMIT_EXCEEDED.
func (s *orderSuite) TestLimitExceededReleasesRedisAndRejects() {
	s.env.OnActivity(contract.ReserveStock, mock.Anything, mock.Anything).Return(contract.ReserveStockResult{}, nil).Once()
	s.env.OnActivity(contract.CreateOrder, mock.Anything, mock.Anything).Return(contract.CreateOrderResult{},
		temporal.NewNonRetryableApplicationError("sku 1001: buyer holds 1, wants 1 more, limit 1",
			contract.TypeFor(flashsale.LimitExceeded), nil)).Once()
	s.env.OnActivity(contract.ReleaseStock, mock.Anything, contract.ReleaseStockInput{
		OrderID: testOrderID, Items: []flashsale.Item{{SKU: "1001", Quantity: 1}, {SKU: "2002", Quantity: 2}},
	}).Return(contract.ReleaseStockResult{Released: 3}, nil).Once()
	var answered Reservation
	s.reserve(func(r Reservation) { answered = r })

	s.env.ExecuteWorkflow(s.wf, input(flashsale.Item{SKU: "1001", Quantity: 1}, flashsale.Item{SKU: "2002", Quantity: 2}))

	s.Equal(Reservation{OrderID: testOrderID, Status: flashsale.StatusRejected, Reason: flashsale.LimitExceeded}, answered)
	v := s.result()
	s.Equal(flashsale.StatusRejected, v.Status)
	s.Equal(flashsale.LimitExceeded, v.Reason)
	s.env.AssertNotCalled(s.T(), "CloseOrder", mock.Anything, mock.Anything)
}

// Transient failures are retried: the order still gets reserved and paid,
// and each side effect lands once because the activities are idempotent.
func (s *orderSuite) TestTransientFailuresAreRetried() {
	payBy := s.env.Now().Add(15 * time.Minute).UTC()
	s.env.OnActivity(contract.ReserveStock, mock.Anything, mock.Anything).Return(contract.ReserveStockResult{}, errors.New("redis: i/o timeout")).Twice()
	s.env.OnActivity(contract.ReserveStock, mock.Anything, mock.Anything).Return(contract.ReserveStockResult{}, nil).Once()
	s.env.OnActivity(contract.CreateOrder, mock.Anything, mock.Anything).Return(contract.CreateOrderResult{}, errors.New("driver: bad connection")).Once()
	s.env.OnActivity(contract.CreateOrder, mock.Anything, mock.Anything).Return(contract.CreateOrderResult{Amount: testAmount, PayBy: payBy}, nil).Once()
	s.env.OnActivity(contract.ConfirmPayment, mock.Anything, mock.Anything).Return(contract.ConfirmPaymentResult{}, errors.New("deadlock")).Once()
	s.env.OnActivity(contract.ConfirmPayment, mock.Anything, mock.Anything).
		Return(contract.ConfirmPaymentResult{OrderStatus: flashsale.StatusPaid, PaymentStatus: flashsale.PaymentCaptured}, nil).Once()
	s.env.RegisterDelayedCallback(func() {
		s.env.SignalWorkflow(SignalPayment, Payment{TransactionID: "t1", Amount: testAmount})
	}, time.Minute)

	s.env.ExecuteWorkflow(s.wf, input())

	s.Equal(flashsale.StatusPaid, s.result().Status)
}

// When Redis stays down past the reservation's retry budget, whatever was
// taken is given back and the buyer is told UNAVAILABLE, instead of the
// workflow failing with units held.
func (s *orderSuite) TestRedisDownRejectsAndReleases() {
	s.env.OnActivity(contract.ReserveStock, mock.Anything, mock.Anything).Return(contract.ReserveStockResult{}, errors.New("connection refused"))
	s.env.OnActivity(contract.ReleaseStock, mock.Anything, mock.Anything).Return(contract.ReleaseStockResult{}, nil).Once()

	s.env.ExecuteWorkflow(s.wf, input())

	v := s.result()
	s.Equal(flashsale.StatusRejected, v.Status)
	s.Equal(flashsale.Unavailable, v.Reason)
	s.env.AssertNotCalled(s.T(), "CreateOrder", mock.Anything, mock.Anything)
}

func (s *orderSuite) TestInvalidInputTouchesNothing() {
	s.env.ExecuteWorkflow(s.wf, OrderInput{OrderID: testOrderID, UserID: "u1",
		Items: []flashsale.Item{{SKU: "1001", Quantity: 0}}})

	v := s.result()
	s.Equal(flashsale.StatusRejected, v.Status)
	s.Equal(flashsale.Invalid, v.Reason)
	s.env.AssertNotCalled(s.T(), "ReserveStock", mock.Anything, mock.Anything)
}

func (s *orderSuite) TestStatusQueryWhilePending() {
	payBy := s.expectReserved()
	s.expectCompensation(flashsale.StatusExpired)
	s.env.RegisterDelayedCallback(func() {
		res, err := s.env.QueryWorkflow(QueryStatus)
		s.Require().NoError(err)
		var v OrderView
		s.Require().NoError(res.Get(&v))
		s.Equal(OrderView{OrderSummary: OrderSummary{OrderID: testOrderID, UserID: "u1", Items: []flashsale.Item{{SKU: "1001", Quantity: 1}},
			Status: flashsale.StatusPendingPayment, Amount: testAmount, PayBy: payBy}}, v)
	}, 5*time.Minute)

	s.env.ExecuteWorkflow(s.wf, input())
	s.Equal(flashsale.StatusExpired, s.result().Status)
}

// The order's current details (the Web UI's "Current Details", read by
// the __temporal_workflow_metadata query) say its status and, while it
// waits for money, until when. The first change made under
// docs/versioning.md: the histories recorded before it replay
// (TestReplayRecordedHistories), since the details are not in them.
func (s *orderSuite) TestCurrentDetailsSayTheStatus() {
	payBy := s.expectReserved()
	s.expectCompensation(flashsale.StatusExpired)
	s.env.RegisterDelayedCallback(func() {
		res, err := s.env.QueryWorkflow("__temporal_workflow_metadata")
		s.Require().NoError(err)
		var md sdkpb.WorkflowMetadata
		s.Require().NoError(res.Get(&md))
		s.Equal("order PENDING_PAYMENT, pay by "+payBy.Format(time.RFC3339), md.GetCurrentDetails())
	}, 5*time.Minute)

	s.env.ExecuteWorkflow(s.wf, input())
	s.Equal(flashsale.StatusExpired, s.result().Status)
	s.Equal("order EXPIRED (PAYMENT_TIMEOUT)", (&order{view: s.result()}).details())
}

// A reserve from another user (an order id reused by someone else) is
// refused by the validator; the buyer's own repeat is answered.
func (s *orderSuite) TestReserveFromAnotherUserIsRefused() {
	s.expectReserved()
	s.expectCompensation(flashsale.StatusExpired)
	var refused error
	var own Reservation
	s.env.RegisterDelayedCallback(func() {
		s.env.UpdateWorkflow(UpdateReserve, "other", &testsuite.TestUpdateCallback{
			OnReject:   func(err error) { refused = err },
			OnAccept:   func() { s.Fail("accepted a reserve from another user") },
			OnComplete: func(any, error) {},
		}, ReserveRequest{UserID: "mallory"})
		s.env.UpdateWorkflow(UpdateReserve, "own", &testsuite.TestUpdateCallback{
			OnReject:   func(err error) { s.Fail("own reserve rejected", err) },
			OnAccept:   func() {},
			OnComplete: func(v any, err error) { s.Require().NoError(err); own = v.(Reservation) },
		}, ReserveRequest{UserID: "u1"})
	}, time.Minute)

	s.env.ExecuteWorkflow(s.wf, input())

	var appErr *temporal.ApplicationError
	s.Require().ErrorAs(refused, &appErr)
	s.Equal(ErrTypeOrderOfAnotherUser, appErr.Type())
	s.Equal(flashsale.StatusPendingPayment, own.Status)
}

// An order started as the starters start it (OrderStatus PENDING_PAYMENT
// on the start) writes OrderStatus only when it changes: a paid order
// upserts PAID and nothing else; the mock fails on any other upsert.
func TestOrderWorkflowUpsertsOnlyAChangedStatus(t *testing.T) {
	s := &orderSuite{wf: OrderWorkflow}
	s.SetT(t)
	s.SetupTest()
	payBy := s.expectReserved()
	s.env.OnActivity(contract.ConfirmPayment, mock.Anything, mock.Anything).
		Return(contract.ConfirmPaymentResult{OrderStatus: flashsale.StatusPaid, PaymentStatus: flashsale.PaymentCaptured}, nil).Once()
	require.NoError(t, s.env.SetTypedSearchAttributesOnStart(OrderSearchAttributes(input(), flashsale.UserIDDigest([]byte("test-key"), "u1"))))
	var wrote []flashsale.Status
	s.env.OnUpsertTypedSearchAttributes(mock.Anything).Run(func(args mock.Arguments) {
		sa := args.Get(0).(temporal.SearchAttributes)
		status, ok := sa.GetKeyword(OrderStatusKey)
		require.True(t, ok, "only OrderStatus is upserted")
		require.Equal(t, 1, sa.Size())
		wrote = append(wrote, flashsale.Status(status))
	}).Return(nil)
	s.reserve(func(r Reservation) { require.Equal(t, payBy, r.PayBy) })
	s.pay(time.Minute, Payment{TransactionID: "t1", Amount: testAmount}, func(PaymentOutcome) {})

	s.env.ExecuteWorkflow(OrderWorkflow, input())

	require.Equal(t, flashsale.StatusPaid, s.result().Status)
	require.Equal(t, []flashsale.Status{flashsale.StatusPaid}, wrote)
	s.env.AssertExpectations(t)
}

// CreateOrder is told the bucket Redis took the units from, so MySQL takes
// them from that bucket's row.
func (s *orderSuite) TestCreateOrderIsToldTheRedisBucket() {
	s.env.OnActivity(contract.ReserveStock, mock.Anything, mock.Anything).Return(contract.ReserveStockResult{
		Reservations: []flashsale.Reservation{{SKU: "1001", Quantity: 1, Parts: []flashsale.Part{{Bucket: 2, Quantity: 1}}}},
	}, nil).Once()
	s.env.OnActivity(contract.CreateOrder, mock.Anything, contract.CreateOrderInput{
		Order:   flashsale.Order{OrderID: testOrderID, UserID: "u1", Items: []flashsale.Item{{SKU: "1001", Quantity: 1}}},
		Buckets: map[string]int{"1001": 2},
	}).Return(contract.CreateOrderResult{Amount: testAmount, PayBy: s.env.Now().Add(time.Minute)}, nil).Once()
	s.expectCompensation(flashsale.StatusExpired)

	s.env.ExecuteWorkflow(s.wf, input())

	s.Equal(flashsale.StatusExpired, s.result().Status)
}
