package orderdb

// The end of a fair sale (SaleWorkflow, docs/design/fair-sale.md): a void
// refunds the paid orders, the close reads the sale's ledger for its report
// and marks the SKU's sale ended before its Redis keys are removed.

import (
	"context"
	"fmt"
	"time"

	"github.com/flashsale/flashsale"

	"gorm.io/gorm"
)

// RefundOrder undoes a PAID order because its sale was voided: the order
// becomes CANCELLED with reason, every CAPTURED payment of it is recorded
// REFUND_REQUIRED (the money is owed back, as for money that reached a
// closed order), the buyer's units are given back to the per-user limit,
// and each line's units go from sold back to available (a REFUND journal
// entry), all in one transaction under the order lock.
//
// It reports whether this call refunded the order. Idempotent: a repeat,
// or an order that was never paid (EXPIRED, CANCELLED), changes nothing and
// answers false. A PENDING_PAYMENT order is Invalid: it is cancelled by its
// workflow, not refunded. An unknown order is OrderNotFound.
//
// Like a cancel, it gives the units back in MySQL only; the caller gives
// them back in Redis (inventory.Store.Release), after this commits.
func (s *Store) RefundOrder(ctx context.Context, orderID, reason string) (Order, bool, error) {
	res, err := s.refund(ctx, orderID, reason, true)
	return res.Order, res.Refunded, err
}

// PaidOrders lists, in order id order, up to limit PAID orders holding sku
// that were created at or after since, with ids after after (a page's
// last id; "" starts): the orders a void of the sale started at since
// refunds.
func (s *Store) PaidOrders(ctx context.Context, sku string, since time.Time, after string, limit int) ([]string, error) {
	var ids []string
	err := s.db.WithContext(ctx).Raw(`SELECT o.order_id FROM orders o
		JOIN order_items i ON i.order_id = o.order_id AND i.sku_id = ?
		WHERE o.status = ? AND o.created_at >= ? AND o.order_id > ?
		ORDER BY o.order_id LIMIT ?`, sku, flashsale.StatusPaid, since.UTC(), after, limit).Scan(&ids).Error
	if err != nil {
		return nil, fmt.Errorf("paid orders of %s: %w", sku, err)
	}
	return ids, nil
}

// RefundedOrders lists, like PaidOrders, the orders holding sku created at
// or after since that a void refunded (RefundOrder): their units are back
// in MySQL, and the caller makes sure they are back in Redis too.
func (s *Store) RefundedOrders(ctx context.Context, sku string, since time.Time, after string, limit int) ([]string, error) {
	var ids []string
	err := s.db.WithContext(ctx).Raw(`SELECT o.order_id FROM orders o
		JOIN inventory_journal j ON j.ref_id = o.order_id AND j.sku_id = ? AND j.type = ?
		WHERE o.created_at >= ? AND o.order_id > ?
		ORDER BY o.order_id LIMIT ?`, sku, journalRefund, since.UTC(), after, limit).Scan(&ids).Error
	if err != nil {
		return nil, fmt.Errorf("refunded orders of %s: %w", sku, err)
	}
	return ids, nil
}

// SaleLedger is what MySQL says of a sale's orders: those holding the SKU
// created since the sale started.
type SaleLedger struct {
	// Orders and Units count the orders and their units of the SKU by
	// status.
	Orders map[flashsale.Status]int64 `json:"orders"`
	Units  map[flashsale.Status]int64 `json:"units"`
	// Revenue is the money captured for PAID orders (minor units).
	Revenue int64 `json:"revenue"`
	// Refunds and RefundAmount are the payments recorded REFUND_REQUIRED:
	// money that reached a closed order, a second payment, and the
	// payments of orders a void refunded.
	Refunds      int64 `json:"refunds_required"`
	RefundAmount int64 `json:"refund_required_amount"`
	// Refunded counts the paid orders a void refunded (REFUND entries).
	Refunded int64 `json:"void_refunded_orders"`
}

// SaleLedger reads the ledger of sku's orders created at or after since,
// from one snapshot.
func (s *Store) SaleLedger(ctx context.Context, sku string, since time.Time) (SaleLedger, error) {
	out := SaleLedger{Orders: map[flashsale.Status]int64{}, Units: map[flashsale.Status]int64{}}
	since = since.UTC()
	// Sums are cast: the demo's go-mysql-server answers SUM as a float.
	err := s.readTx(ctx, func(tx *gorm.DB) error {
		var byStatus []struct {
			Status string
			Orders int64
			Units  int64
		}
		if err := tx.Raw(`SELECT o.status AS status, COUNT(*) AS orders, CAST(COALESCE(SUM(i.quantity), 0) AS SIGNED) AS units
			FROM orders o JOIN order_items i ON i.order_id = o.order_id AND i.sku_id = ?
			WHERE o.created_at >= ? GROUP BY o.status`, sku, since).Scan(&byStatus).Error; err != nil {
			return fmt.Errorf("orders: %w", err)
		}
		for _, r := range byStatus {
			out.Orders[flashsale.Status(r.Status)], out.Units[flashsale.Status(r.Status)] = r.Orders, r.Units
		}
		var pays []struct {
			Status string
			N      int64
			Amount int64
		}
		if err := tx.Raw(`SELECT p.status AS status, COUNT(*) AS n, CAST(COALESCE(SUM(p.amount), 0) AS SIGNED) AS amount
			FROM payments p JOIN orders o ON o.order_id = p.order_id
			JOIN order_items i ON i.order_id = p.order_id AND i.sku_id = ?
			WHERE o.created_at >= ? AND (p.status <> ? OR o.status = ?) GROUP BY p.status`,
			sku, since, flashsale.PaymentCaptured, flashsale.StatusPaid).Scan(&pays).Error; err != nil {
			return fmt.Errorf("payments: %w", err)
		}
		for _, p := range pays {
			switch flashsale.PaymentStatus(p.Status) {
			case flashsale.PaymentCaptured:
				out.Revenue = p.Amount
			case flashsale.PaymentRefundRequired:
				out.Refunds, out.RefundAmount = p.N, p.Amount
			}
		}
		return tx.Raw(`SELECT COUNT(DISTINCT j.ref_id) FROM inventory_journal j
			JOIN orders o ON o.order_id = j.ref_id
			WHERE j.sku_id = ? AND j.type = ? AND o.created_at >= ?`, sku, journalRefund, since).Scan(&out.Refunded).Error
	})
	if err != nil {
		return SaleLedger{}, fmt.Errorf("sale ledger of %s: %w", sku, err)
	}
	return out, nil
}

// EndSale marks sku's sale ended, once: the first call's time is kept and
// returned by every repeat. From then on reconciliation and the invariant
// checker leave the SKU's Redis keys alone (they are being removed), until
// a PutSKU or ReopenSale starts another sale. UnknownSKU for a SKU MySQL
// does not know.
func (s *Store) EndSale(ctx context.Context, sku string) (time.Time, error) {
	db := s.db.WithContext(ctx)
	if err := db.Exec(`UPDATE inventory SET sale_ended_at = COALESCE(sale_ended_at, ?) WHERE sku_id = ?`, now(), sku).Error; err != nil {
		return time.Time{}, fmt.Errorf("end sale of %s: %w", sku, classify(err, nil))
	}
	ended, err := s.SaleEndedAt(ctx, sku)
	if err != nil {
		return time.Time{}, err
	}
	if ended.IsZero() {
		return time.Time{}, fmt.Errorf("end sale of %s: reopened at once", sku)
	}
	return ended, nil
}

// SaleEndedAt is when sku's sale ended (EndSale), zero while it has not.
func (s *Store) SaleEndedAt(ctx context.Context, sku string) (time.Time, error) {
	row, err := takeInventory(s.db.WithContext(ctx), sku)
	if err != nil {
		return time.Time{}, fmt.Errorf("sale end of %s: %w", sku, err)
	}
	if row.SaleEndedAt == nil {
		return time.Time{}, nil
	}
	return row.SaleEndedAt.UTC(), nil
}

// ReopenSale clears sku's ended mark: its Redis keys are about to be
// written again (a preheat). A no-op for a SKU whose sale never ended.
func (s *Store) ReopenSale(ctx context.Context, sku string) error {
	if err := s.db.WithContext(ctx).Exec(`UPDATE inventory SET sale_ended_at = NULL WHERE sku_id = ? AND sale_ended_at IS NOT NULL`,
		sku).Error; err != nil {
		return fmt.Errorf("reopen sale of %s: %w", sku, classify(err, nil))
	}
	return nil
}
