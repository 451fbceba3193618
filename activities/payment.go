package activities

import (
	"context"
	"errors"
	"fmt"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/activities/contract"
	"github.com/flashsale/flashsale/internal/orderdb"
)

// ConfirmPayment moves the order's units frozen -> sold and records the
// payment, once per transaction id. A payment the order cannot take (closed,
// or already paid by another transaction) is recorded for refund rather than
// lost.
//
// Business answers: TransactionConflict (the transaction id is another
// order's; nothing written), AmountMismatch, and InvalidRequest for input or
// a database answer that no retry can change. Every other error is retried.
func (a *Activities) ConfirmPayment(ctx context.Context, in contract.ConfirmPaymentInput) (contract.ConfirmPaymentResult, error) {
	r, err := a.Orders.ConfirmPayment(ctx, in.OrderID, in.TransactionID, in.Amount)
	if err != nil {
		if flashsale.ErrorCode(err) == flashsale.Permanent {
			a.logger(ctx).Error("payment refused by the database for good", "order_id", in.OrderID,
				"transaction_id", in.TransactionID, "error", err)
		}
		return contract.ConfirmPaymentResult{}, paymentError(fmt.Sprintf("confirm payment %s of order %s", in.TransactionID, in.OrderID), err)
	}
	return contract.ConfirmPaymentResult{
		OrderStatus: r.Order.Status, PaymentStatus: flashsale.PaymentStatus(r.Payment.Status),
		Reason: flashsale.Code(r.Payment.Reason), Duplicate: r.Duplicate,
	}, nil
}

// RecordRefund records a payment as REFUND_REQUIRED, once per transaction
// id. It never touches inventory: the money is owed back, no unit is sold.
// A transaction id recorded for another order is a TransactionConflict and
// records nothing: refunding it would refund the other order's sale.
func (a *Activities) RecordRefund(ctx context.Context, in contract.RecordRefundInput) (contract.RecordRefundResult, error) {
	p, err := a.Orders.RecordRefund(ctx, orderdb.Payment{
		TransactionID: in.TransactionID, OrderID: in.OrderID, Amount: in.Amount,
		Status: flashsale.PaymentRefundRequired, Reason: string(in.Reason),
	})
	if err != nil {
		if flashsale.ErrorCode(err) == flashsale.Permanent {
			a.logger(ctx).Error("refund refused by the database for good", "order_id", in.OrderID,
				"transaction_id", in.TransactionID, "error", err)
		}
		return contract.RecordRefundResult{}, paymentError(fmt.Sprintf("record refund %s of order %s", in.TransactionID, in.OrderID), err)
	}
	return contract.RecordRefundResult{PaymentStatus: flashsale.PaymentStatus(p.Status), OrderID: p.OrderID}, nil
}

// paymentError gives the store's refusals of a payment as business answers;
// anything else stays retryable, wrapped with op.
func paymentError(op string, err error) error {
	switch flashsale.ErrorCode(err) {
	case flashsale.TransactionConflict:
		var details contract.TransactionConflictDetails
		if conflict, ok := errors.AsType[*orderdb.TransactionConflictError](err); ok {
			details = contract.TransactionConflictDetails{TransactionID: conflict.TransactionID, RecordedFor: conflict.RecordedFor}
		}
		return refuse(op, err, details)
	case flashsale.AmountMismatch, flashsale.Invalid, flashsale.Permanent:
		return refuse(op, err)
	default:
		return fmt.Errorf("%s: %w", op, err)
	}
}

// ExtendHold moves an unpaid order's pay_by once, when its payment
// provider says the buyer started paying (orderdb.Store.ExtendHold). A
// second extension (HoldExtended), a closed order (OrderClosed) and a
// pay_by that moved (Invalid) are business answers.
func (a *Activities) ExtendHold(ctx context.Context, in contract.ExtendHoldInput) (contract.ExtendHoldResult, error) {
	o, err := a.Orders.ExtendHold(ctx, in.OrderID, in.From, in.To)
	op := "extend hold of order " + in.OrderID
	switch flashsale.ErrorCode(err) {
	case "":
		return contract.ExtendHoldResult{PayBy: o.PayBy}, nil
	case flashsale.HoldExtended, flashsale.OrderClosed, flashsale.Invalid, flashsale.OrderNotFound, flashsale.Permanent:
		if flashsale.ErrorCode(err) == flashsale.OrderNotFound {
			return contract.ExtendHoldResult{}, refuseAs(flashsale.OrderClosed, op, err)
		}
		return contract.ExtendHoldResult{}, refuse(op, err)
	}
	return contract.ExtendHoldResult{}, fmt.Errorf("%s: %w", op, err)
}
