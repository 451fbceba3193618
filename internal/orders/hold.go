package orders

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/workflows"
)

// ExtendHold asks an unpaid order to move its pay_by by `by`, once (its
// provider says the buyer started paying; workflows.UpdateExtendHold). It
// answers the order with its new pay_by. Refusals: Invalid (by out of
// bounds), HoldExtended (extended before; a retry of the first request is
// refused the same way, and the order's pay_by says what holds),
// OrderClosed (not awaiting payment, or past its pay_by), OrderNotFound.
func (s *Service) ExtendHold(ctx context.Context, orderID string, by time.Duration, reason string) (workflows.OrderView, error) {
	h, err := s.Temporal.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID:   workflows.OrderWorkflowID(orderID),
		UpdateName:   workflows.UpdateExtendHold,
		Args:         []any{workflows.HoldExtension{ExtendBy: by, Reason: reason}},
		WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	var out workflows.HoldExtended
	if err == nil {
		err = h.Get(ctx, &out)
	}
	if appErr, ok := errors.AsType[*temporal.ApplicationError](err); ok {
		code := map[string]flashsale.Code{
			workflows.ErrTypeHoldExtended: flashsale.HoldExtended, workflows.ErrTypeNotPayable: flashsale.OrderClosed,
			workflows.ErrTypeBadExtension: flashsale.Invalid,
		}[appErr.Type()]
		if code != "" {
			return workflows.OrderView{}, fmt.Errorf("extend hold of order %s: %w", orderID, flashsale.Errorf(code, "%s", appErr.Message()))
		}
	}
	switch {
	case isNotFound(err):
		view, qerr := s.Snapshot(ctx, orderID)
		if qerr != nil {
			return workflows.OrderView{}, qerr
		}
		return workflows.OrderView{}, closed(orderID, view.Status)
	case err != nil:
		return workflows.OrderView{}, temporalErr("extend hold of order "+orderID, err)
	}
	return s.Snapshot(ctx, orderID)
}

// PaymentFailed tells a running order that its provider reported a failed
// payment: an order whose SKUs release on a failed payment closes and puts
// its units back at once; any other waits for its deadline as before. An
// order no longer running is left as it is.
func (s *Service) PaymentFailed(ctx context.Context, orderID, transactionID string) error {
	err := s.Temporal.SignalWorkflow(ctx, workflows.OrderWorkflowID(orderID), "", workflows.SignalPaymentFailed,
		workflows.PaymentFailure{TransactionID: transactionID})
	if err != nil && !isNotFound(err) {
		return temporalErr("tell order "+orderID+" of a failed payment", err)
	}
	return nil
}
