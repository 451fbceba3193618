package orders

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/internal/orderdb"
	"github.com/flashsale/flashsale/workflows"
)

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
		if flashsale.ErrorCode(qerr) == flashsale.OrderNotFound {
			// A transaction of another order records nothing here; the
			// answer is still "no such order".
			_, rerr := s.recordRefund(ctx, orderID, p, string(flashsale.UnknownOrder))
			if rerr != nil && flashsale.ErrorCode(rerr) != flashsale.TransactionConflict {
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
		reason := string(flashsale.OrderClosed)
		if view.Status == flashsale.StatusPaid {
			reason = string(flashsale.AlreadyPaid)
		}
		pay, rerr := s.recordRefund(ctx, orderID, p, reason)
		if flashsale.ErrorCode(rerr) == flashsale.TransactionConflict {
			// The transaction is another order's money: nothing was
			// recorded here, and answering "refund" would refund that
			// order's sale.
			return workflows.PaymentOutcome{
				OrderID: orderID, TransactionID: p.TransactionID, Status: view.Status,
				Conflict: true, Reason: flashsale.TransactionConflict,
			}, nil
		}
		if rerr != nil {
			return workflows.PaymentOutcome{}, rerr
		}
		return workflows.PaymentOutcome{
			OrderID: orderID, TransactionID: p.TransactionID, Status: view.Status,
			Refund: workflows.RefundRequired, Reason: flashsale.Code(pay.Reason),
		}, nil
	default:
		if appErr, ok := errors.AsType[*temporal.ApplicationError](err); ok {
			// The update validator refused the payment; its words are
			// written for the payer.
			return workflows.PaymentOutcome{}, fmt.Errorf("pay order %s: %w", orderID,
				flashsale.Errorf(flashsale.Invalid, "%s", appErr.Message()))
		}
		return workflows.PaymentOutcome{}, temporalErr("pay order "+orderID, err)
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
		s.logger().WarnContext(ctx, "payment receipt not recorded; the order learns of the payment through Temporal only",
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
		Status: flashsale.PaymentRefundRequired, Reason: reason,
	})
	if err != nil {
		return orderdb.Payment{}, fmt.Errorf("record late payment %s for order %s: %w", p.TransactionID, orderID, err)
	}
	return pay, nil
}
