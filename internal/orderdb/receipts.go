package orderdb

import (
	"context"
	"fmt"
	"time"

	"github.com/flashsale/flashsale"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// Receipt is a payment our door received, recorded before the order's
// workflow hears of it (migrations/00004_payment_receipts.sql).
type Receipt struct {
	TransactionID string    `json:"transaction_id"`
	OrderID       string    `json:"order_id"`
	Amount        int64     `json:"amount"`
	ReceivedAt    time.Time `json:"received_at"`
}

// PaymentReceivedError means CloseOrder found a payment received before
// the order's deadline that nothing has answered yet (no payments row):
// closing the order would refund a buyer who paid in time. Nothing was
// written. Its code is PaymentReceived.
type PaymentReceivedError struct{ Receipt Receipt }

func (e *PaymentReceivedError) Error() string {
	return fmt.Sprintf("transaction %s of %d received at %s: %v", e.Receipt.TransactionID, e.Receipt.Amount,
		e.Receipt.ReceivedAt.Format(time.RFC3339Nano), e.Unwrap())
}

// Unwrap gives the code: flashsale.ErrorCode(err) is PaymentReceived.
func (e *PaymentReceivedError) Unwrap() error {
	return flashsale.Errorf(flashsale.PaymentReceived, "payment received in time, not applied yet")
}

type receiptRow struct {
	TransactionID string    `gorm:"column:transaction_id;primaryKey"`
	OrderID       string    `gorm:"column:order_id"`
	Amount        int64     `gorm:"column:amount"`
	ReceivedAt    time.Time `gorm:"column:received_at"`
}

func (receiptRow) TableName() string { return "payment_receipts" }

// RecordReceipt notes that a payment reached us, before anyone acts on it.
// Idempotent: a repeat (the provider's retry) keeps the first arrival time.
func (s *Store) RecordReceipt(ctx context.Context, r Receipt) error {
	if err := flashsale.CheckID("transaction_id", r.TransactionID, flashsale.MaxTransactionIDLength); err != nil {
		return fmt.Errorf("record receipt %s for order %s: %w", r.TransactionID, r.OrderID, err)
	}
	if err := flashsale.CheckID("order_id", r.OrderID, flashsale.MaxIDLength); err != nil {
		return fmt.Errorf("record receipt %s for order %s: %w", r.TransactionID, r.OrderID, err)
	}
	if r.Amount <= 0 {
		return fmt.Errorf("record receipt %s for order %s: %w", r.TransactionID, r.OrderID, invalidf("amount %d is not positive", r.Amount))
	}
	row := receiptRow{TransactionID: r.TransactionID, OrderID: r.OrderID, Amount: r.Amount,
		ReceivedAt: ceilMillisecond(r.ReceivedAt.UTC())}
	// DoNothing keeps the first receipt (see RecordRefund for why not
	// INSERT IGNORE).
	if err := s.db.WithContext(ctx).Clauses(clause.OnConflict{DoNothing: true}).Create(&row).Error; err != nil {
		return fmt.Errorf("record receipt %s for order %s: %w", r.TransactionID, r.OrderID, classify(err, nil))
	}
	return nil
}

// unansweredReceipt returns the earliest receipt for orderID received by
// payBy whose transaction has no payments row (neither captured nor
// recorded for refund, for this order or another), or nil.
func unansweredReceipt(tx *gorm.DB, orderID string, payBy time.Time) (*Receipt, error) {
	var rows []receiptRow
	err := tx.Raw(`SELECT r.transaction_id, r.order_id, r.amount, r.received_at
		FROM payment_receipts r
		WHERE r.order_id = ? AND r.received_at <= ?
		  AND NOT EXISTS (SELECT 1 FROM payments p WHERE p.transaction_id = r.transaction_id)
		ORDER BY r.received_at LIMIT 1`, orderID, payBy.UTC()).Scan(&rows).Error
	if err != nil || len(rows) == 0 {
		return nil, err
	}
	r := rows[0]
	return &Receipt{TransactionID: r.TransactionID, OrderID: r.OrderID, Amount: r.Amount, ReceivedAt: r.ReceivedAt.UTC()}, nil
}

// ceilMillisecond rounds t up to the column's precision. pay_by is stored
// to the millisecond too, so a payment that arrived any fraction after
// pay_by stays after it, as the workflow judges it (ReceivedAt.After).
func ceilMillisecond(t time.Time) time.Time {
	if d := t.Truncate(time.Millisecond); !d.Equal(t) {
		return d.Add(time.Millisecond)
	}
	return t
}
