package orderdb

import (
	"context"
	"fmt"
	"time"

	"github.com/flashsale/flashsale"

	"gorm.io/gorm"
)

// ExtendHold moves an unpaid order's pay_by from `from` to `to`, once: a
// payment provider's buyer started paying (flashsale.MaxHoldExtension).
// The order lock decides against a payment or a close running at the same
// time. A retry that finds the move made answers it again; a second
// extension is HoldExtended, a closed or paid order OrderClosed, and an
// order whose pay_by is no longer `from` Invalid. It returns the order.
func (s *Store) ExtendHold(ctx context.Context, orderID string, from, to time.Time) (Order, error) {
	from, to = from.UTC().Truncate(time.Millisecond), to.UTC().Truncate(time.Millisecond)
	var out orderRow
	err := s.writeTx(ctx, nil, func(tx *gorm.DB) error {
		ord, err := lockOrder(tx, orderID)
		if err != nil {
			return err
		}
		out = ord
		switch {
		case ord.HoldExtended && ord.PayBy.UTC().Equal(to):
			return nil // this extension, made by an earlier attempt
		case ord.HoldExtended:
			return flashsale.Errorf(flashsale.HoldExtended, "the order's hold was extended once already")
		case ord.Status != string(flashsale.StatusPendingPayment):
			return flashsale.Errorf(flashsale.OrderClosed, "order already paid, expired, cancelled or rejected")
		case !ord.PayBy.UTC().Equal(from):
			return invalidf("pay_by is %s, not %s", ord.PayBy.UTC().Format(time.RFC3339Nano), from.Format(time.RFC3339Nano))
		}
		out.PayBy, out.HoldExtended, out.UpdatedAt = to, true, now()
		return tx.Model(&orderRow{}).Where("order_id = ? AND status = ?", orderID, flashsale.StatusPendingPayment).
			UpdateColumns(map[string]any{"pay_by": to, "hold_extended": true, "updated_at": out.UpdatedAt}).Error
	})
	if err != nil {
		return Order{}, fmt.Errorf("extend hold of order %s: %w", orderID, err)
	}
	return toOrder(out, nil, nil), nil
}
