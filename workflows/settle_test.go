package workflows

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/activities/contract"
)

// Tests of settleInTask: an order settles inside the workflow task that
// decides it (local activities), and falls back to regular activities only
// when a dependency does not answer.

// ranAs records, by activity type, whether each attempt ran as a local
// activity ("local") or a regular one ("activity").
func (s *orderSuite) ranAs() map[string][]string {
	ran := map[string][]string{}
	s.env.SetOnLocalActivityStartedListener(func(info *activity.Info, _ context.Context, _ []any) {
		ran[info.ActivityType.Name] = append(ran[info.ActivityType.Name], "local")
	})
	s.env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, _ converter.EncodedValues) {
		ran[info.ActivityType.Name] = append(ran[info.ActivityType.Name], "activity")
	})
	return ran
}

func (s *orderSuite) TestPaymentIsConfirmedInsideTheTask() {
	ran := s.ranAs()
	s.expectReserved()
	s.env.OnActivity(contract.ConfirmPayment, mock.Anything, confirmInput("t1")).Return(captured, nil).Once()
	s.pay(time.Minute, Payment{TransactionID: "t1", Amount: testAmount}, func(PaymentOutcome) {})

	s.env.ExecuteWorkflow(s.wf, input())

	s.Equal(flashsale.StatusPaid, s.result().Status)
	s.Equal(map[string][]string{
		"ReserveStock": {"local"}, "CreateOrder": {"local"}, "ConfirmPayment": {"local"},
	}, ran)
}

func (s *orderSuite) TestExpiryIsCompensatedInsideTheTask() {
	ran := s.ranAs()
	s.expectReserved()
	s.expectCompensation(flashsale.StatusExpired)

	s.env.ExecuteWorkflow(s.wf, input())

	s.Equal(flashsale.StatusExpired, s.result().Status)
	s.Equal(map[string][]string{
		"ReserveStock": {"local"}, "CreateOrder": {"local"},
		"CloseOrder": {"local"}, "OfferToWaitlist": {"local"}, "ReleaseStock": {"local"},
	}, ran)
}

// MySQL does not answer for a minute when the order expires: the local
// attempt gives up after its budget, the regular activity retries until
// MySQL is back, and the order still closes and releases its unit once.
func (s *orderSuite) TestCompensationFallsBackToAnActivity() {
	ran := s.ranAs()
	start := s.env.Now()
	payBy := s.expectReserved()
	down := payBy.Add(arrivalGrace + time.Minute)
	s.env.OnActivity(contract.CloseOrder, mock.Anything, mock.Anything).Return(
		func(context.Context, contract.CloseOrderInput) (contract.CloseOrderResult, error) {
			if s.env.Now().Before(down) {
				return contract.CloseOrderResult{}, errors.New("dial tcp: connection refused")
			}
			return contract.CloseOrderResult{}, nil
		})
	s.expectNobodyWaiting()
	s.env.OnActivity(contract.ReleaseStock, mock.Anything, mock.Anything).Return(contract.ReleaseStockResult{Released: 1}, nil).Once()

	s.env.ExecuteWorkflow(s.wf, input())

	s.Equal(flashsale.StatusExpired, s.result().Status)
	s.GreaterOrEqual(s.env.Now().Sub(start), down.Sub(start))
	// Local attempts for their budget, then the activity's, never back.
	closes := ran["CloseOrder"]
	firstActivity := slices.Index(closes, "activity")
	s.Positive(firstActivity, "local attempts first, then an activity: %v", closes)
	s.NotContains(closes[firstActivity:], "local", "%v", closes)
	s.Equal([]string{"local"}, ran["ReleaseStock"], "the next step tries the task again")
}
