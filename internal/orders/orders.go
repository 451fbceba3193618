// Package orders is the client side of the order workflow: placing an order
// with Update-with-Start, paying, cancelling and reading it. The starter CLI
// and the HTTP API both go through it, so they behave the same way on
// duplicates, late payments and closed orders.
package orders

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/flashsale/flashsale"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/flashsale/flashsale/internal/orderdb"
	"github.com/flashsale/flashsale/workflows"
)

// Errors callers branch on.
var (
	ErrInvalid     error = &flashsale.Error{Code: flashsale.Invalid, Message: "invalid request"}
	ErrNotFound    error = &flashsale.Error{Code: flashsale.OrderNotFound, Message: "order not found"}
	ErrClosed      error = &flashsale.Error{Code: flashsale.OrderClosed, Message: "order closed"}
	ErrIDConflict  error = &flashsale.Error{Code: flashsale.OrderIDConflict, Message: "order id already used by another order"}
	ErrUnavailable error = &flashsale.Error{Code: flashsale.Unavailable, Message: "order service unavailable"}
)

// Service places and manages orders.
type Service struct {
	Temporal  client.Client
	TaskQueue string
	// Orders is the database, used for payments that reach an order whose
	// workflow has already completed.
	Orders *orderdb.Store
	// Logger notes what a caller is not told (a receipt that could not be
	// written); nil means slog.Default().
	Logger *slog.Logger
}

// Place starts the order's workflow and waits for the reservation answer in
// the same call (Update-with-Start). Placing the same order id again returns
// the first answer and takes no second unit: a running workflow is reused,
// and a finished one is read instead of started again.
func (s *Service) Place(ctx context.Context, in workflows.OrderInput) (workflows.Reservation, error) {
	if err := workflows.ValidateInput(in); err != nil {
		return workflows.Reservation{}, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	// Offer ids are the workflow's to give (wl-<released order>): a buyer's
	// order under one would block the offer and could be cancelled by
	// whoever knows the released order. Every door places through here.
	if strings.HasPrefix(in.OrderID, workflows.WaitlistOrderPrefix) {
		return workflows.Reservation{}, fmt.Errorf("%w: order ids starting with %s are reserved for waitlist offers",
			ErrInvalid, workflows.WaitlistOrderPrefix)
	}
	start := s.Temporal.NewWithStartWorkflowOperation(client.StartWorkflowOptions{
		ID:        workflows.OrderWorkflowID(in.OrderID),
		TaskQueue: s.TaskQueue,
		// USE_EXISTING: a duplicate click attaches to the running order.
		WorkflowIDConflictPolicy: enums.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		// REJECT_DUPLICATE: a finished order is never bought again.
		WorkflowIDReusePolicy: enums.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		// Set on start, so the Web UI can filter from the first event
		// without costing the workflow an upsert.
		TypedSearchAttributes: temporal.NewSearchAttributes(
			workflows.OrderStatusKey.ValueSet(string(workflows.StatusReserving)),
			workflows.UserIDKey.ValueSet(in.UserID),
			workflows.SKUIDsKey.ValueSet(workflows.SKUs(in.Items)),
		),
		StaticSummary: fmt.Sprintf("order %s by %s", in.OrderID, in.UserID),
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
		return workflows.Reservation{}, fmt.Errorf("order %s: %w", in.OrderID, ErrIDConflict)
	}
	if err != nil {
		var started *serviceerror.WorkflowExecutionAlreadyStarted
		if !errors.As(err, &started) && !isNotFound(err) {
			return workflows.Reservation{}, fmt.Errorf("place order %s: %w", in.OrderID, err)
		}
		// The order exists and has finished: answer from its record.
		view, qerr := s.Status(ctx, in.OrderID)
		if qerr != nil {
			return workflows.Reservation{}, qerr
		}
		res = reservationFromView(view)
		if view.UserID != in.UserID {
			return res, ErrIDConflict
		}
		return res, nil
	}
	return res, nil
}

func reservationFromView(v workflows.OrderView) workflows.Reservation {
	r := workflows.Reservation{OrderID: v.OrderID, Status: workflows.StatusPendingPayment, Amount: v.Amount, PayBy: v.PayBy}
	if v.Status == workflows.StatusRejected {
		r.Status, r.Reason = workflows.StatusRejected, v.Reason
	}
	return r
}

// payWait is how long Pay waits for the order to answer a payment before
// handing it over as a signal instead. An update waits for the order's next
// workflow task; when that task is busy (a payment activity retrying after
// a lost reply) or the worker is restarting, the wait can outlast the
// caller, and a payment provider told 5xx retries on its own schedule,
// possibly after the deadline. A signal is written to the order's history
// the moment the server takes it, with the payment's arrival time, and the
// order judges it by that time (workflows.paymentArrivalChangeID keeps the
// order open arrivalGrace past pay_by for it, which must stay above this).
const payWait = 2 * time.Second

// Pay hands a payment to the order and returns what became of it. The same
// transaction id always gets the same outcome. When the order's workflow has
// already completed, the payment is recorded for refund in the database, so
// money is never lost and never turned into a sale. A transaction id already
// recorded for another order is answered with Conflict set (nothing taken,
// nothing owed) both while the order runs and after. When the order does not
// answer within payWait, the payment is signalled to it and the outcome has
// Queued set: it is the order's now, and its status shows the result.
//
// p.ReceivedAt is when the caller's door took the payment; zero means now.
func (s *Service) Pay(ctx context.Context, orderID string, p workflows.Payment) (workflows.PaymentOutcome, error) {
	if p.ReceivedAt.IsZero() {
		p.ReceivedAt = time.Now()
	}
	s.recordReceipt(ctx, orderID, p)
	out, err := s.payByUpdate(ctx, orderID, p)
	if _, slow := errors.AsType[*client.WorkflowUpdateServiceTimeoutOrCanceledError](err); slow && ctx.Err() == nil {
		// The order did not get to the payment in time. The same
		// transaction as a signal: durable at once, and applied once
		// even if the update is admitted too (the order skips a
		// transaction it has already handled).
		err = s.Temporal.SignalWorkflow(ctx, workflows.OrderWorkflowID(orderID), "", workflows.SignalPayment, p)
		if err == nil {
			return workflows.PaymentOutcome{OrderID: orderID, TransactionID: p.TransactionID, Queued: true}, nil
		}
	}
	switch {
	case err == nil:
		return out, nil
	case isNotFound(err):
		// Either no such order, or its workflow has completed: the
		// database tells which, with no worker needed to answer.
		view, qerr := s.Snapshot(ctx, orderID)
		if errors.Is(qerr, ErrNotFound) {
			// A transaction of another order records nothing here; the
			// answer is still "no such order".
			_, rerr := s.recordRefund(ctx, orderID, p, workflows.RefundReasonUnknownOrder)
			if rerr != nil && !errors.Is(rerr, orderdb.ErrTransactionConflict) {
				return workflows.PaymentOutcome{}, rerr
			}
			return workflows.PaymentOutcome{}, qerr
		}
		if qerr != nil {
			return workflows.PaymentOutcome{}, qerr
		}
		for _, prev := range view.Payments {
			if prev.TransactionID == p.TransactionID {
				prev.Duplicate = true
				return prev, nil
			}
		}
		reason := workflows.RefundReasonOrderClosed
		if view.Status == workflows.StatusPaid {
			reason = workflows.RefundReasonAlreadyPaid
		}
		pay, rerr := s.recordRefund(ctx, orderID, p, reason)
		if errors.Is(rerr, orderdb.ErrTransactionConflict) {
			// The transaction is another order's money: nothing was
			// recorded here, and answering "refund" would refund that
			// order's sale.
			return workflows.PaymentOutcome{
				OrderID: orderID, TransactionID: p.TransactionID, Status: view.Status,
				Conflict: true, Reason: workflows.PaymentReasonTransactionConflict,
			}, nil
		}
		if rerr != nil {
			return workflows.PaymentOutcome{}, rerr
		}
		return workflows.PaymentOutcome{
			OrderID: orderID, TransactionID: p.TransactionID, Status: view.Status,
			Refund: workflows.RefundRequired, Reason: pay.Reason,
		}, nil
	default:
		var appErr *temporal.ApplicationError
		if errors.As(err, &appErr) {
			// The update validator refused the payment.
			return workflows.PaymentOutcome{}, fmt.Errorf("%w: %s", ErrInvalid, appErr.Message())
		}
		return workflows.PaymentOutcome{}, fmt.Errorf("pay order %s: %w", orderID, err)
	}
}

// recordReceipt writes that the payment reached us, before the order is
// told: if Temporal cannot deliver it by the deadline, the order's close
// finds it in the database and applies it instead (orderdb.RecordReceipt).
// Best effort: without MySQL the payment still goes to the order, which
// cannot confirm it before MySQL is back anyway, and answering 5xx would
// only leave the money to the provider's retry schedule.
func (s *Service) recordReceipt(ctx context.Context, orderID string, p workflows.Payment) {
	if s.Orders == nil {
		return
	}
	err := s.Orders.RecordReceipt(ctx, orderdb.Receipt{
		TransactionID: p.TransactionID, OrderID: orderID, Amount: p.Amount, ReceivedAt: p.ReceivedAt,
	})
	if err != nil {
		logger := s.Logger
		if logger == nil {
			logger = slog.Default()
		}
		logger.WarnContext(ctx, "payment receipt not recorded; the order learns of the payment through Temporal only",
			"order_id", orderID, "transaction_id", p.TransactionID, "error", err)
	}
}

// payByUpdate sends the pay update and waits up to payWait for its outcome.
func (s *Service) payByUpdate(ctx context.Context, orderID string, p workflows.Payment) (workflows.PaymentOutcome, error) {
	ctx, cancel := context.WithTimeout(ctx, payWait)
	defer cancel()
	h, err := s.Temporal.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID:   workflows.OrderWorkflowID(orderID),
		UpdateID:     "pay-" + p.TransactionID,
		UpdateName:   workflows.UpdatePay,
		Args:         []any{p},
		WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	var out workflows.PaymentOutcome
	if err == nil {
		err = h.Get(ctx, &out)
	}
	return out, err
}

func (s *Service) recordRefund(ctx context.Context, orderID string, p workflows.Payment, reason string) (orderdb.Payment, error) {
	pay, err := s.Orders.RecordRefund(ctx, orderdb.Payment{
		TransactionID: p.TransactionID, OrderID: orderID, Amount: p.Amount,
		Status: orderdb.PaymentRefundRequired, Reason: reason,
	})
	if err != nil {
		return orderdb.Payment{}, fmt.Errorf("record late payment %s for order %s: %w", p.TransactionID, orderID, err)
	}
	return pay, nil
}

// Cancel asks an unpaid order to cancel and waits until its stock is back
// on sale. It returns ErrClosed, with the order, when the order was already
// paid, expired, cancelled or rejected (or got paid while cancelling).
func (s *Service) Cancel(ctx context.Context, orderID string) (workflows.OrderView, error) {
	id := workflows.OrderWorkflowID(orderID)
	err := s.Temporal.SignalWorkflow(ctx, id, "", workflows.SignalCancel, workflows.CancelRequest{Reason: workflows.ReasonBuyerCancelled})
	switch {
	case err == nil:
	case isNotFound(err): // no such order, or it has finished
		view, qerr := s.Status(ctx, orderID)
		if qerr != nil {
			return workflows.OrderView{}, qerr
		}
		if view.Status == workflows.StatusCancelled {
			return view, nil // a repeated cancel
		}
		return view, ErrClosed
	default:
		return workflows.OrderView{}, fmt.Errorf("cancel order %s: %w", orderID, err)
	}
	// The workflow ends right after compensation; waiting for its result
	// is a long poll, not a loop.
	var view workflows.OrderView
	if err := s.Temporal.GetWorkflow(ctx, id, "").Get(ctx, &view); err != nil {
		return workflows.OrderView{}, fmt.Errorf("wait for cancel of order %s: %w", orderID, err)
	}
	if view.Status != workflows.StatusCancelled {
		return view, ErrClosed
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
	if errors.Is(err, orderdb.ErrNotFound) {
		return s.Status(ctx, orderID)
	}
	if err != nil {
		return workflows.OrderView{}, fmt.Errorf("read order %s: %w", orderID, err)
	}
	view := workflows.OrderView{
		OrderID: o.OrderID, UserID: o.UserID, Status: workflows.Status(o.Status), Amount: o.Amount,
		PayBy: o.PayBy, Reason: o.Reason, Degraded: o.Degraded,
	}
	for _, it := range o.Items {
		view.Items = append(view.Items, workflows.Item{SKU: it.SKU, Quantity: it.Quantity})
	}
	for _, p := range o.Payments {
		out := workflows.PaymentOutcome{OrderID: o.OrderID, TransactionID: p.TransactionID, Status: view.Status}
		if p.Status == orderdb.PaymentRefundRequired {
			out.Refund, out.Reason = workflows.RefundRequired, p.Reason
		} else {
			out.Status = workflows.StatusPaid
		}
		view.Payments = append(view.Payments, out)
	}
	return view, nil
}

// Status returns the order as its workflow sees it, plus payments recorded
// for refund after the workflow ended.
func (s *Service) Status(ctx context.Context, orderID string) (workflows.OrderView, error) {
	resp, err := s.Temporal.QueryWorkflow(ctx, workflows.OrderWorkflowID(orderID), "", workflows.QueryStatus)
	if err != nil {
		if isNotFound(err) {
			return workflows.OrderView{}, fmt.Errorf("order %s: %w", orderID, ErrNotFound)
		}
		return workflows.OrderView{}, fmt.Errorf("query order %s: %w", orderID, err)
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
		if known[p.TransactionID] || p.Status != orderdb.PaymentRefundRequired {
			continue
		}
		view.Payments = append(view.Payments, workflows.PaymentOutcome{
			OrderID: orderID, TransactionID: p.TransactionID, Status: view.Status,
			Refund: workflows.RefundRequired, Reason: p.Reason,
		})
	}
	return view, nil
}

// isNotFound recognises the server's answer for a workflow that does not
// exist, and also for an update or signal sent to one that has completed
// ("workflow execution already completed").
func isNotFound(err error) bool {
	var nf *serviceerror.NotFound
	return errors.As(err, &nf)
}
