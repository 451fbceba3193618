package orders

import (
	"context"
	"errors"
	"fmt"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/workflows"
)

// PlaceOrder is Place for a buyer's order, on the worker's payment timeout.
func (s *Service) PlaceOrder(ctx context.Context, o flashsale.Order) (workflows.Reservation, error) {
	return s.Place(ctx, workflows.OrderInput{OrderID: o.OrderID, UserID: o.UserID, Items: o.Items, FromOrder: o.FromOrder})
}

// Place starts the order's workflow and waits for the reservation answer in
// the same call (Update-with-Start). Placing the same order id again returns
// the first answer and takes no second unit: a running workflow is reused,
// and a finished one is read instead of started again.
//
// The order passes flashsale.Order.Validate first, at every door: among its
// rules, offer ids (wl-<released order>) are the workflow's to give, since a
// buyer's order under one would block the offer and could be cancelled by
// whoever knows the released order.
func (s *Service) Place(ctx context.Context, in workflows.OrderInput) (workflows.Reservation, error) {
	o := in.Order()
	if err := o.Validate(); err != nil {
		return workflows.Reservation{}, fmt.Errorf("place order %s: %w", in.OrderID, err)
	}
	if in.PaymentTimeout < 0 {
		return workflows.Reservation{}, flashsale.Errorf(flashsale.Invalid, "payment_timeout must not be negative")
	}
	start := s.Temporal.NewWithStartWorkflowOperation(client.StartWorkflowOptions{
		ID:        workflows.OrderWorkflowID(in.OrderID),
		TaskQueue: s.TaskQueue,
		// USE_EXISTING: a duplicate click attaches to the running order.
		WorkflowIDConflictPolicy: enums.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		// REJECT_DUPLICATE: a finished order is never bought again.
		WorkflowIDReusePolicy: enums.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		// Set on start, so the Web UI can filter from the first event
		// without costing the workflow an upsert; OrderStatus is already
		// the PENDING_PAYMENT a reserved order keeps.
		TypedSearchAttributes: workflows.OrderSearchAttributes(in, s.UserDigest(in.UserID)),
		StaticSummary:         fmt.Sprintf("order %s by %s", in.OrderID, s.UserDigest(in.UserID)),
		Priority:              s.priorityOf(in),
	}, workflows.OrderWorkflow, in)

	h, err := s.Temporal.UpdateWithStartWorkflow(ctx, client.UpdateWithStartWorkflowOptions{
		StartWorkflowOperation: start,
		UpdateOptions: client.UpdateWorkflowOptions{
			// A fixed update id per buyer makes a repeated call on a
			// running order return the stored result instead of running the
			// handler again. The user is part of it because the server
			// answers a known update id from its record without asking the
			// validator: another user's reserve must reach the validator.
			UpdateID:     workflows.UpdateReserve + "-" + in.UserID,
			UpdateName:   workflows.UpdateReserve,
			Args:         []any{workflows.ReserveRequest{UserID: in.UserID}},
			WaitForStage: client.WorkflowUpdateStageCompleted,
		},
	})
	var res workflows.Reservation
	if err == nil {
		err = h.Get(ctx, &res)
	}
	if appErr, ok := errors.AsType[*temporal.ApplicationError](err); ok && appErr.Type() == workflows.ErrTypeOrderOfAnotherUser {
		// The running order's validator refused: the id is someone else's.
		return workflows.Reservation{}, idConflict(in.OrderID)
	}
	if err != nil {
		if _, started := errors.AsType[*serviceerror.WorkflowExecutionAlreadyStarted](err); !started && !isNotFound(err) {
			return workflows.Reservation{}, temporalErr("place order "+in.OrderID, err)
		}
		// The order exists and has finished: answer from its record.
		view, qerr := s.Status(ctx, in.OrderID)
		if qerr != nil {
			return workflows.Reservation{}, qerr
		}
		res = reservationFromView(view)
		if view.UserID != in.UserID {
			return res, idConflict(in.OrderID)
		}
		return res, nil
	}
	return res, nil
}

func reservationFromView(v workflows.OrderView) workflows.Reservation {
	r := workflows.Reservation{OrderID: v.OrderID, Status: flashsale.StatusPendingPayment, Amount: v.Amount, PayBy: v.PayBy}
	if v.Status == flashsale.StatusRejected {
		r.Status, r.Reason = flashsale.StatusRejected, v.Reason
	}
	return r
}

// priorityOf is the task-queue priority of in's workflow: the service's,
// with the first SKU as fairness key when FairnessBySKU.
func (s *Service) priorityOf(in workflows.OrderInput) temporal.Priority {
	p := s.Priority
	if s.FairnessBySKU && len(in.Items) > 0 {
		p.FairnessKey = in.Items[0].SKU
	}
	return p
}
