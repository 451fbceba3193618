package orders

import (
	"context"
	"fmt"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/internal/orderdb"
	"github.com/flashsale/flashsale/workflows"
)

// Cancel asks an unpaid order to cancel and waits until its stock is back
// on sale. It returns an OrderClosed error, with the order, when the order was already
// paid, expired, cancelled or rejected (or got paid while cancelling).
func (s *Service) Cancel(ctx context.Context, orderID string) (workflows.OrderView, error) {
	id := workflows.OrderWorkflowID(orderID)
	err := s.Temporal.SignalWorkflow(ctx, id, "", workflows.SignalCancel, workflows.CancelRequest{Reason: string(flashsale.CancelledByUser)})
	switch {
	case err == nil:
	case isNotFound(err): // no such order, or it has finished
		view, qerr := s.Status(ctx, orderID)
		if qerr != nil {
			return workflows.OrderView{}, qerr
		}
		if view.Status == flashsale.StatusCancelled {
			return view, nil // a repeated cancel
		}
		return view, closed(orderID, view.Status)
	default:
		return workflows.OrderView{}, temporalErr("cancel order "+orderID, err)
	}
	// The workflow ends right after compensation; waiting for its result
	// is a long poll, not a loop.
	var view workflows.OrderView
	if err := s.Temporal.GetWorkflow(ctx, id, "").Get(ctx, &view); err != nil {
		return workflows.OrderView{}, temporalErr("wait for cancel of order "+orderID, err)
	}
	if view.Status != flashsale.StatusCancelled {
		return view, closed(orderID, view.Status)
	}
	return view, nil
}

// Snapshot returns the order as the database has it: its status and the
// payments recorded for it. Unlike Status it needs no worker (a query on a
// workflow, even a completed one, is answered by a worker replaying it), so
// a payment callback is answered while workers are busy or restarting. An
// order the database never had (rejected before its row was written, or
// unknown) is asked of Temporal, as Status does.
func (s *Service) Snapshot(ctx context.Context, orderID string) (workflows.OrderView, error) {
	if s.Orders == nil {
		return s.Status(ctx, orderID)
	}
	o, err := s.Orders.Order(ctx, orderID)
	if flashsale.ErrorCode(err) == flashsale.OrderNotFound {
		return s.Status(ctx, orderID)
	}
	if err != nil {
		return workflows.OrderView{}, fmt.Errorf("read order %s: %w", orderID, err)
	}
	return viewOf(o), nil
}

// viewOf is an order as the database has it, in the workflow's shape.
func viewOf(o orderdb.Order) workflows.OrderView {
	view := workflows.OrderView{
		OrderSummary: workflows.OrderSummary{OrderID: o.OrderID, UserID: o.UserID, Status: o.Status, Amount: o.Amount,
			PayBy: o.PayBy, Reason: flashsale.Code(o.Reason)},
		Degraded: o.Degraded, HoldExtended: o.HoldExtended,
	}
	for _, it := range o.Items {
		view.Items = append(view.Items, flashsale.Item{SKU: it.SKU, Quantity: it.Quantity})
	}
	for _, p := range o.Payments {
		out := workflows.PaymentOutcome{OrderID: o.OrderID, TransactionID: p.TransactionID, Status: view.Status}
		if p.Status == flashsale.PaymentRefundRequired {
			out.Refund, out.Reason = workflows.RefundRequired, flashsale.Code(p.Reason)
		} else {
			out.Status = flashsale.StatusPaid
		}
		view.Payments = append(view.Payments, out)
	}
	return view
}

// Status returns the order as its workflow sees it, plus payments recorded
// for refund after the workflow ended.
func (s *Service) Status(ctx context.Context, orderID string) (workflows.OrderView, error) {
	resp, err := s.Temporal.QueryWorkflow(ctx, workflows.OrderWorkflowID(orderID), "", workflows.QueryStatus)
	if err != nil {
		if isNotFound(err) {
			return workflows.OrderView{}, notFound(orderID)
		}
		return workflows.OrderView{}, temporalErr("query order "+orderID, err)
	}
	var view workflows.OrderView
	if err := resp.Get(&view); err != nil {
		return workflows.OrderView{}, fmt.Errorf("decode order %s: %w", orderID, err)
	}
	if !view.Status.Closed() || s.Orders == nil {
		return view, nil
	}
	late, err := s.Orders.Payments(ctx, orderID)
	if err != nil {
		return workflows.OrderView{}, fmt.Errorf("read payments of order %s: %w", orderID, err)
	}
	known := make(map[string]bool, len(view.Payments))
	for _, p := range view.Payments {
		known[p.TransactionID] = true
	}
	for _, p := range late {
		if known[p.TransactionID] || p.Status != flashsale.PaymentRefundRequired {
			continue
		}
		view.Payments = append(view.Payments, workflows.PaymentOutcome{
			OrderID: orderID, TransactionID: p.TransactionID, Status: view.Status,
			Refund: workflows.RefundRequired, Reason: flashsale.Code(p.Reason),
		})
	}
	return view, nil
}
