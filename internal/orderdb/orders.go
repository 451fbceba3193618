package orderdb

import (
	"context"
	"errors"
	"fmt"

	"gorm.io/gorm"

	"github.com/flashsale/flashsale"
)

// Order returns an order with its items and payments, or OrderNotFound.
func (s *Store) Order(ctx context.Context, orderID string) (Order, error) {
	var out Order
	err := s.readTx(ctx, func(tx *gorm.DB) error {
		ord, err := takeOrder(tx, orderID)
		if err != nil {
			return err
		}
		out, err = loadOrder(tx, ord)
		return err
	})
	if err != nil {
		return Order{}, fmt.Errorf("order %s: %w", orderID, err)
	}
	return out, nil
}

func loadOrder(tx *gorm.DB, ord orderRow) (Order, error) {
	items, err := loadItems(tx, ord.OrderID)
	if err != nil {
		return Order{}, err
	}
	pays, err := loadPayments(tx, ord.OrderID)
	if err != nil {
		return Order{}, err
	}
	return toOrder(ord, items, pays), nil
}

// Payments returns every payment recorded against an order id, oldest
// first. Unlike Order it works for ids with no order row (rejected or
// unknown orders), whose payments are refunds.
func (s *Store) Payments(ctx context.Context, orderID string) ([]Payment, error) {
	rows, err := loadPayments(s.db.WithContext(ctx), orderID)
	if err != nil {
		return nil, fmt.Errorf("payments of order %s: %w", orderID, err)
	}
	out := make([]Payment, len(rows))
	for i, r := range rows {
		out[i] = r.toPayment()
	}
	return out, nil
}

// OrderHead is who an order belongs to and where it stands: what a reader
// needs to decide, before anything costlier, whether the caller may see it
// and where its answer lives (closed orders in MySQL, open ones in their
// workflow).
type OrderHead struct {
	OrderID string           `json:"order_id"`
	UserID  string           `json:"user_id"`
	Status  flashsale.Status `json:"status"`
}

// Head reads one order row by its unique order_id key, or OrderNotFound.
// It is one indexed point read and nothing else, so an order that exists
// and one that does not cost a reader the same.
func (s *Store) Head(ctx context.Context, orderID string) (OrderHead, error) {
	var row struct {
		UserID string `gorm:"column:user_id"`
		Status string `gorm:"column:status"`
	}
	err := s.db.WithContext(ctx).Model(&orderRow{}).Select("user_id", "status").
		Where("order_id = ?", orderID).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return OrderHead{}, fmt.Errorf("order %s: %w", orderID, flashsale.Errorf(flashsale.OrderNotFound, "not found"))
	}
	if err != nil {
		return OrderHead{}, fmt.Errorf("order %s: %w", orderID, err)
	}
	return OrderHead{OrderID: orderID, UserID: row.UserID, Status: flashsale.Status(row.Status)}, nil
}

// RefundsRequired counts the payments recorded for refund (REFUND_REQUIRED):
// money taken that must go back, the backlog the refund alert watches. A
// scan of payments, which holds one row per payment (thousands for a sale),
// read at most every few seconds by a metrics collector.
func (s *Store) RefundsRequired(ctx context.Context) (int64, error) {
	var n int64
	err := s.db.WithContext(ctx).Model(&paymentRow{}).Where("status = ?", flashsale.PaymentRefundRequired).Count(&n).Error
	if err != nil {
		return 0, fmt.Errorf("count payments to refund: %w", err)
	}
	return n, nil
}
