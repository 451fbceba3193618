package activities

import (
	"context"
	"errors"
	"fmt"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/internal/orderdb"
)

// ConfirmPaymentInput is a payment to apply to an order.
type ConfirmPaymentInput struct {
	OrderID       string `json:"order_id"`
	TransactionID string `json:"transaction_id"`
	Amount        int64  `json:"amount"`
}

// ConfirmPaymentResult says what the database made of the payment.
type ConfirmPaymentResult struct {
	OrderStatus   flashsale.Status      `json:"order_status"`
	PaymentStatus orderdb.PaymentStatus `json:"payment_status"`
	Reason        flashsale.Code        `json:"reason,omitempty"`
	Duplicate     bool                  `json:"duplicate,omitempty"`
}

// RefundRequired reports whether the database recorded the payment for
// refund instead of capturing it (the order had closed, or was paid by
// another transaction).
func (r ConfirmPaymentResult) RefundRequired() bool {
	return r.PaymentStatus == orderdb.PaymentRefundRequired
}

// ConfirmPayment moves the order's units frozen -> sold and records the
// payment, once per transaction id. A payment the order cannot take (closed,
// or already paid by another transaction) is recorded for refund rather than
// lost.
//
// Business answers: TransactionConflict (the transaction id is another
// order's; nothing written), AmountMismatch, and InvalidRequest for input or
// a database answer that no retry can change. Every other error is retried.
func (a *Activities) ConfirmPayment(ctx context.Context, in ConfirmPaymentInput) (ConfirmPaymentResult, error) {
	r, err := a.Orders.ConfirmPayment(ctx, in.OrderID, in.TransactionID, in.Amount)
	if err != nil {
		if flashsale.ErrorCode(err) == flashsale.Permanent {
			a.logger(ctx).Error("payment refused by the database for good", "order_id", in.OrderID,
				"transaction_id", in.TransactionID, "error", err)
		}
		return ConfirmPaymentResult{}, paymentError(fmt.Sprintf("confirm payment %s of order %s", in.TransactionID, in.OrderID), err)
	}
	return ConfirmPaymentResult{
		OrderStatus: r.Order.Status, PaymentStatus: r.Payment.Status,
		Reason: flashsale.Code(r.Payment.Reason), Duplicate: r.Duplicate,
	}, nil
}

// RecordRefundInput is money that arrived for an order that cannot take it.
type RecordRefundInput struct {
	OrderID       string         `json:"order_id"`
	TransactionID string         `json:"transaction_id"`
	Amount        int64          `json:"amount"`
	Reason        flashsale.Code `json:"reason"`
}

// RecordRefundResult is the payment as stored for the order. Histories
// recorded before these fields existed decode it empty; the workflow reads
// an empty PaymentStatus as REFUND_REQUIRED, which is all it could be then.
type RecordRefundResult struct {
	// PaymentStatus is REFUND_REQUIRED, or CAPTURED when the transaction
	// had already paid this very order (a ConfirmPayment that committed
	// after the workflow stopped waiting for it): the money is kept.
	PaymentStatus orderdb.PaymentStatus `json:"payment_status,omitempty"`
	// OrderID is the order the stored payment belongs to: always the
	// input's, since another order's transaction is a TransactionConflict.
	OrderID string `json:"order_id,omitempty"`
}

// Captured reports whether the transaction turned out to have paid this
// very order: the money is kept, nothing is owed back.
func (r RecordRefundResult) Captured() bool {
	return r.PaymentStatus == orderdb.PaymentCaptured
}

// RecordRefund records a payment as REFUND_REQUIRED, once per transaction
// id. It never touches inventory: the money is owed back, no unit is sold.
// A transaction id recorded for another order is a TransactionConflict and
// records nothing: refunding it would refund the other order's sale.
func (a *Activities) RecordRefund(ctx context.Context, in RecordRefundInput) (RecordRefundResult, error) {
	p, err := a.Orders.RecordRefund(ctx, orderdb.Payment{
		TransactionID: in.TransactionID, OrderID: in.OrderID, Amount: in.Amount,
		Status: orderdb.PaymentRefundRequired, Reason: string(in.Reason),
	})
	if err != nil {
		if flashsale.ErrorCode(err) == flashsale.Permanent {
			a.logger(ctx).Error("refund refused by the database for good", "order_id", in.OrderID,
				"transaction_id", in.TransactionID, "error", err)
		}
		return RecordRefundResult{}, paymentError(fmt.Sprintf("record refund %s of order %s", in.TransactionID, in.OrderID), err)
	}
	return RecordRefundResult{PaymentStatus: p.Status, OrderID: p.OrderID}, nil
}

// paymentError gives the store's refusals of a payment as business answers;
// anything else stays retryable, wrapped with op.
func paymentError(op string, err error) error {
	switch flashsale.ErrorCode(err) {
	case flashsale.TransactionConflict:
		var details TransactionConflictDetails
		if conflict, ok := errors.AsType[*orderdb.TransactionConflictError](err); ok {
			details = TransactionConflictDetails{TransactionID: conflict.TransactionID, RecordedFor: conflict.RecordedFor}
		}
		return refuse(op, err, details)
	case flashsale.AmountMismatch, flashsale.Invalid, flashsale.Permanent:
		return refuse(op, err)
	default:
		return fmt.Errorf("%s: %w", op, err)
	}
}
