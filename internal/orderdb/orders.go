package orderdb

import (
	"context"
	"fmt"

	"gorm.io/gorm"
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
