package orderdb

import (
	"context"
	"fmt"
	"time"

	"github.com/flashsale/flashsale"

	"gorm.io/gorm"
)

// PendingPastDeadline lists up to limit PENDING_PAYMENT orders whose pay_by
// is before before, oldest deadline first, with their items: the orders
// the reconcile run's net looks at (their workflow should have closed them
// by now). skus, when given, keeps the orders holding one of them. It uses
// the (status, pay_by) index.
func (s *Store) PendingPastDeadline(ctx context.Context, before time.Time, skus []string, limit int) ([]Order, error) {
	q := s.db.WithContext(ctx).Model(&orderRow{}).
		Where("status = ? AND pay_by < ?", flashsale.StatusPendingPayment, before.UTC())
	if len(skus) > 0 {
		q = q.Where("EXISTS (SELECT 1 FROM order_items i WHERE i.order_id = orders.order_id AND i.sku_id IN ?)", skus)
	}
	var rows []orderRow
	if err := q.Order("pay_by").Limit(limit).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("orders past their deadline: %w", err)
	}
	out := make([]Order, 0, len(rows))
	for _, r := range rows {
		o, err := loadOrder(s.db.WithContext(ctx), r)
		if err != nil {
			return nil, fmt.Errorf("orders past their deadline: %w", err)
		}
		out = append(out, o)
	}
	return out, nil
}

// OverdueOrder is an unpaid order past its deadline, for the overdue
// gauges.
type OverdueOrder struct {
	OrderID string
	PayBy   time.Time
}

// CountPendingPastDeadline counts the PENDING_PAYMENT orders whose pay_by
// is before before, and returns the oldest up to limit of them.
func (s *Store) CountPendingPastDeadline(ctx context.Context, before time.Time, limit int) (int64, []OverdueOrder, error) {
	q := func() *gorm.DB {
		return s.db.WithContext(ctx).Model(&orderRow{}).
			Where("status = ? AND pay_by < ?", flashsale.StatusPendingPayment, before.UTC())
	}
	var n int64
	if err := q().Count(&n).Error; err != nil {
		return 0, nil, fmt.Errorf("count orders past their deadline: %w", err)
	}
	var oldest []OverdueOrder
	if n > 0 {
		if err := q().Select("order_id", "pay_by").Order("pay_by").Limit(limit).Scan(&oldest).Error; err != nil {
			return 0, nil, fmt.Errorf("oldest orders past their deadline: %w", err)
		}
	}
	return n, oldest, nil
}
