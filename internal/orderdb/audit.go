package orderdb

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/flashsale/flashsale"

	"gorm.io/gorm"
)

// Read-only queries for reconciliation and the invariant checker. They sit
// here, beside the schema and the journal types, so that what "the units of
// the current sale" or "an order's journal" means is defined once. None of
// them writes.

// auditChunk bounds the ids in one IN (...) list; a sale's reconciliation
// may ask about many thousands of orders.
const auditChunk = 1000

// SKUIDs lists every SKU with an inventory row, sorted.
func (s *Store) SKUIDs(ctx context.Context) ([]string, error) {
	var ids []string
	if err := s.db.WithContext(ctx).Model(&inventoryRow{}).Order("sku_id").Pluck("sku_id", &ids).Error; err != nil {
		return nil, fmt.Errorf("list skus: %w", err)
	}
	return ids, nil
}

// StockView is a SKU's inventory row and the status of some orders, read
// from one consistent snapshot.
type StockView struct {
	Inventory Inventory
	// Statuses has an entry for every asked order that has a row.
	Statuses map[string]flashsale.Status
}

// StockView reads sku's inventory row and the status of orderIDs in one
// REPEATABLE READ snapshot. Because an order's row and its stock move
// commit together (CreateOrder, CloseOrder), the snapshot sees each order
// either before or after its move, never halfway: a reconciler comparing
// the two cannot count a unit both as available and as frozen.
func (s *Store) StockView(ctx context.Context, sku string, orderIDs []string) (StockView, error) {
	out := StockView{Statuses: make(map[string]flashsale.Status, len(orderIDs))}
	err := s.readTx(ctx, func(tx *gorm.DB) error {
		row, err := takeStock(tx, sku)
		if err != nil {
			return err
		}
		out.Inventory = row.toInventory()
		for ids := range slices.Chunk(orderIDs, auditChunk) {
			var rows []struct {
				OrderID string
				Status  string
			}
			if err := tx.Model(&orderRow{}).Select("order_id", "status").Where("order_id IN ?", ids).Scan(&rows).Error; err != nil {
				return err
			}
			for _, r := range rows {
				out.Statuses[r.OrderID] = flashsale.Status(r.Status)
			}
		}
		return nil
	})
	if err != nil {
		return StockView{}, fmt.Errorf("stock view %s: %w", sku, err)
	}
	return out, nil
}

// SKUAudit is what the database says about one SKU, from one snapshot.
type SKUAudit struct {
	Inventory Inventory `json:"inventory"`
	// PendingUnits are the units of PENDING_PAYMENT orders.
	PendingUnits int64 `json:"pending_units"`
	// PaidUnits are the units of PAID orders of the current sale: those
	// reserved after the SKU's last RESET (PutSKU zeroes sold, so orders
	// paid in an earlier sale no longer count).
	PaidUnits int64 `json:"paid_units"`
	// Journal replays the SKU's journal.
	Journal JournalReplay `json:"journal"`
	// OrderJournals lists orders whose journal entries for the SKU do not
	// match their status.
	OrderJournals []OrderJournal `json:"order_journals,omitempty"`
}

// JournalReplay sums a SKU's journal. RESET entries carry deltas relative
// to the row they replaced, so the sum over every entry, across sales,
// replays the current row.
type JournalReplay struct {
	Entries   int64 `json:"entries"`
	Available int64 `json:"available"`
	Frozen    int64 `json:"frozen"`
	Sold      int64 `json:"sold"`
	// Last is the newest entry's after-values (zero with no entries).
	LastAvailable int64 `json:"last_available"`
	LastFrozen    int64 `json:"last_frozen"`
	LastSold      int64 `json:"last_sold"`
	// Breaks counts entries that do not follow from the one before (its
	// before-values are not the previous after-values, or after - before
	// is not its delta); FirstBreak is the id of the first.
	Breaks     int64 `json:"breaks"`
	FirstBreak int64 `json:"first_break,omitempty"`
}

// OrderJournal is an order whose journal entries for a SKU disagree with
// its status: a PENDING_PAYMENT order has exactly RESERVE, a PAID one
// RESERVE and SELL, an expired or cancelled one RESERVE and RELEASE, or
// RESERVE, SELL and REFUND when a void cancelled it after it was paid. A
// deferred order (deducted at payment) has SELL once PAID, else nothing.
type OrderJournal struct {
	OrderID string           `json:"order_id"`
	Status  flashsale.Status `json:"status"`
	// Types are the entry types found, sorted and comma-separated.
	Types string `json:"types"`
	Want  string `json:"want"`
}

// AuditSKU reads sku's row, its order units, its journal replay and its
// orders whose journal disagrees with their status, all from one
// REPEATABLE READ snapshot so a live sale cannot tear the comparison.
func (s *Store) AuditSKU(ctx context.Context, sku string) (SKUAudit, error) {
	var out SKUAudit
	err := s.readTx(ctx, func(tx *gorm.DB) error {
		row, err := takeStock(tx, sku)
		if err != nil {
			return err
		}
		out.Inventory = row.toInventory()

		if err := tx.Raw(`SELECT COALESCE(SUM(i.quantity), 0) FROM order_items i
			JOIN orders o ON o.order_id = i.order_id
			WHERE i.sku_id = ? AND o.status = ? AND NOT o.deferred`, sku, flashsale.StatusPendingPayment).Scan(&out.PendingUnits).Error; err != nil {
			return fmt.Errorf("pending units: %w", err)
		}
		// The journal id orders the SKU's entries by the row lock they were
		// written under, so "RESERVE after the last RESET" is exact.
		var lastReset int64
		if err := tx.Raw(`SELECT COALESCE(MAX(id), 0) FROM inventory_journal WHERE sku_id = ? AND type = ?`,
			sku, journalReset).Scan(&lastReset).Error; err != nil {
			return fmt.Errorf("last reset: %w", err)
		}
		if err := tx.Raw(`SELECT COALESCE(SUM(i.quantity), 0) FROM order_items i
			JOIN orders o ON o.order_id = i.order_id
			WHERE i.sku_id = ? AND o.status = ? AND EXISTS (
				SELECT 1 FROM inventory_journal j
				WHERE j.ref_id = i.order_id AND j.sku_id = i.sku_id AND j.type = IF(o.deferred, ?, ?) AND j.id > ?)`,
			sku, flashsale.StatusPaid, journalSell, journalReserve, lastReset).Scan(&out.PaidUnits).Error; err != nil {
			return fmt.Errorf("paid units: %w", err)
		}

		j := &out.Journal
		if err := tx.Raw(`SELECT COUNT(*) AS entries, COALESCE(SUM(delta_available), 0) AS available,
			COALESCE(SUM(delta_frozen), 0) AS frozen, COALESCE(SUM(delta_sold), 0) AS sold
			FROM inventory_journal WHERE sku_id = ?`, sku).Scan(j).Error; err != nil {
			return fmt.Errorf("journal sums: %w", err)
		}
		// The newest entry of each of the SKU's rows (its inventory row and
		// its bucket rows, each journaled on its own) ends where that row
		// is; together they end at the SKU's truth.
		var last struct{ Available, Frozen, Sold int64 }
		if err := tx.Raw(`SELECT COALESCE(SUM(available_after), 0) AS available, COALESCE(SUM(frozen_after), 0) AS frozen,
				COALESCE(SUM(sold_after), 0) AS sold
			FROM inventory_journal WHERE id IN (SELECT MAX(id) FROM inventory_journal WHERE sku_id = ? GROUP BY bucket)`,
			sku).Scan(&last).Error; err != nil {
			return fmt.Errorf("last journal entries: %w", err)
		}
		j.LastAvailable, j.LastFrozen, j.LastSold = last.Available, last.Frozen, last.Sold
		// Each entry must start where the previous one of its row ended.
		// The first entry of a row (the SKU's creation, a bucket row's
		// first split) starts from zero.
		var breaks struct {
			Breaks     int64
			FirstBreak int64
		}
		if err := tx.Raw(`SELECT COUNT(*) AS breaks, COALESCE(MIN(id), 0) AS first_break FROM (
				SELECT id, delta_available, delta_frozen, delta_sold,
					available_before, available_after, frozen_after, sold_after,
					LAG(available_after) OVER (PARTITION BY bucket ORDER BY id) AS prev_available,
					LAG(frozen_after) OVER (PARTITION BY bucket ORDER BY id) AS prev_frozen,
					LAG(sold_after) OVER (PARTITION BY bucket ORDER BY id) AS prev_sold
				FROM inventory_journal WHERE sku_id = ?
			) x
			WHERE available_after - available_before <> delta_available
				OR available_before <> COALESCE(prev_available, 0)
				OR frozen_after - delta_frozen <> COALESCE(prev_frozen, 0)
				OR sold_after - delta_sold <> COALESCE(prev_sold, 0)`, sku).Scan(&breaks).Error; err != nil {
			return fmt.Errorf("journal chain: %w", err)
		}
		j.Breaks, j.FirstBreak = breaks.Breaks, breaks.FirstBreak

		if err := tx.Raw(`SELECT order_id, status, types, want FROM (
				SELECT o.order_id, o.status,
					COALESCE(GROUP_CONCAT(DISTINCT j.type ORDER BY j.type SEPARATOR ','), '') AS types,
					IF(o.deferred, IF(o.status = ?, ?, ''), CASE o.status WHEN ? THEN ? WHEN ? THEN ? ELSE ? END) AS want
				FROM orders o
				JOIN order_items i ON i.order_id = o.order_id AND i.sku_id = ?
				LEFT JOIN inventory_journal j ON j.ref_id = o.order_id AND j.sku_id = i.sku_id
				GROUP BY o.order_id, o.status
			) x WHERE types <> want AND NOT (status = ? AND types = ?) ORDER BY order_id`,
			// A deferred order (NewOrder.Deferred) journals its SELL only.
			flashsale.StatusPaid, journalSell,
			flashsale.StatusPendingPayment, journalReserve,
			flashsale.StatusPaid, journalReserve+","+journalSell,
			journalRelease+","+journalReserve,
			sku,
			// A paid order a void refunded: sold, then back to available.
			flashsale.StatusCancelled, journalRefund+","+journalReserve+","+journalSell,
		).Scan(&out.OrderJournals).Error; err != nil {
			return fmt.Errorf("order journals: %w", err)
		}
		return nil
	})
	if err != nil {
		return SKUAudit{}, fmt.Errorf("audit sku %s: %w", sku, err)
	}
	return out, nil
}

// PaymentAnomaly is a payment, or a PAID order, that breaks the payment
// rules: money is either CAPTURED by exactly one payment of a PAID order
// (for its amount) or REFUND_REQUIRED.
type PaymentAnomaly struct {
	TransactionID string `json:"transaction_id,omitempty"`
	OrderID       string `json:"order_id"`
	// SKU is the order's smallest SKU id ("" when the order is unknown).
	SKU           string `json:"sku_id"`
	PaymentStatus string `json:"payment_status,omitempty"`
	// OrderStatus is "" when no order row exists.
	OrderStatus string `json:"order_status"`
	Amount      int64  `json:"amount"`
	OrderAmount int64  `json:"order_amount"`
	// Captures counts the CAPTURED payments of a PAID order.
	Captures int64 `json:"captures"`
}

// Money is what the payments hold, in minor units: CAPTURED (kept for a
// sale), REFUND_REQUIRED (owed back) and REFUNDED (sent back), beside the
// amounts of the PAID orders, which the captured money must equal.
type Money struct {
	Captured   int64 `json:"captured"`
	Owed       int64 `json:"owed"`
	Refunded   int64 `json:"refunded"`
	PaidOrders int64 `json:"paid_orders"`
}

// PaymentAudit groups the anomalies by the rule they break.
type PaymentAudit struct {
	// CapturedNotPaid: CAPTURED money on an order that is not PAID or does
	// not exist; the buyer paid and got nothing.
	CapturedNotPaid []PaymentAnomaly `json:"captured_not_paid,omitempty"`
	// BadStatus: a status that is none of CAPTURED, REFUND_REQUIRED and
	// REFUNDED.
	BadStatus []PaymentAnomaly `json:"bad_status,omitempty"`
	// RefundNotOwed: an order refunded after it was paid (REFUND entries)
	// whose money is not all owed back or sent back: the buyer lost it.
	RefundNotOwed []PaymentAnomaly `json:"refund_not_owed,omitempty"`
	// Money sums the payments and the paid orders.
	Money Money `json:"money"`
	// AmountMismatch: a CAPTURED payment for another amount than the order's.
	AmountMismatch []PaymentAnomaly `json:"amount_mismatch,omitempty"`
	// PaidCaptures: PAID orders with no, or more than one, CAPTURED payment.
	PaidCaptures []PaymentAnomaly `json:"paid_captures,omitempty"`
	// ReceivedNotKept: money our door received by the order's deadline
	// (payment_receipts) for an order that closed unpaid, and that no
	// payments row answers: the buyer paid in time and was neither sold
	// the unit nor owed a refund.
	ReceivedNotKept []PaymentAnomaly `json:"received_not_kept,omitempty"`
}

// PaymentAudit finds payment anomalies. With sku set, only orders holding
// that SKU are looked at (payments for unknown orders then cannot be
// attributed and are left out); with sku empty, everything is.
func (s *Store) PaymentAudit(ctx context.Context, sku string) (PaymentAudit, error) {
	var out PaymentAudit
	filter, args := "", []any{}
	if sku != "" {
		filter = " AND EXISTS (SELECT 1 FROM order_items f WHERE f.order_id = p.order_id AND f.sku_id = ?)"
		args = append(args, sku)
	}
	const payments = `SELECT p.transaction_id, p.order_id, p.status AS payment_status,
			COALESCE(o.status, '') AS order_status, p.amount, COALESCE(o.amount, 0) AS order_amount,
			COALESCE((SELECT MIN(i.sku_id) FROM order_items i WHERE i.order_id = p.order_id), '') AS sku
		FROM payments p LEFT JOIN orders o ON o.order_id = p.order_id WHERE `
	err := s.readTx(ctx, func(tx *gorm.DB) error {
		queries := []struct {
			dst   *[]PaymentAnomaly
			where string
			args  []any
		}{
			{&out.CapturedNotPaid, "p.status = ? AND (o.status IS NULL OR o.status <> ?)", []any{flashsale.PaymentCaptured, flashsale.StatusPaid}},
			{&out.BadStatus, "p.status NOT IN (?, ?, ?)", []any{flashsale.PaymentCaptured, flashsale.PaymentRefundRequired, flashsale.PaymentRefunded}},
			{&out.AmountMismatch, "p.status = ? AND o.status = ? AND p.amount <> o.amount", []any{flashsale.PaymentCaptured, flashsale.StatusPaid}},
		}
		for _, q := range queries {
			if err := tx.Raw(payments+q.where+filter+" ORDER BY p.id", append(q.args, args...)...).Scan(q.dst).Error; err != nil {
				return err
			}
		}
		orderFilter := ""
		if sku != "" {
			orderFilter = " AND EXISTS (SELECT 1 FROM order_items f WHERE f.order_id = o.order_id AND f.sku_id = ?)"
		}
		err := tx.Raw(`SELECT r.transaction_id, r.order_id, o.status AS order_status, r.amount, o.amount AS order_amount,
				COALESCE((SELECT MIN(i.sku_id) FROM order_items i WHERE i.order_id = o.order_id), '') AS sku
			FROM payment_receipts r JOIN orders o ON o.order_id = r.order_id
			WHERE r.received_at <= o.pay_by AND o.status IN (?, ?)
			  AND NOT EXISTS (SELECT 1 FROM payments p WHERE p.transaction_id = r.transaction_id)`+orderFilter+`
			ORDER BY r.received_at`,
			append([]any{flashsale.StatusExpired, flashsale.StatusCancelled}, args...)...).Scan(&out.ReceivedNotKept).Error
		if err != nil {
			return err
		}
		if err := tx.Raw(`SELECT o.order_id, o.status AS order_status, o.amount AS order_amount, COALESCE(SUM(p.amount), 0) AS amount,
				COALESCE((SELECT MIN(i.sku_id) FROM order_items i WHERE i.order_id = o.order_id), '') AS sku
			FROM orders o LEFT JOIN payments p ON p.order_id = o.order_id AND p.status IN (?, ?)
			WHERE EXISTS (SELECT 1 FROM inventory_journal j WHERE j.ref_id = o.order_id AND j.type = ?)`+orderFilter+`
			GROUP BY o.order_id, o.status, o.amount HAVING COALESCE(SUM(p.amount), 0) < o.amount ORDER BY o.order_id`,
			append([]any{flashsale.PaymentRefundRequired, flashsale.PaymentRefunded, journalRefund}, args...)...).Scan(&out.RefundNotOwed).Error; err != nil {
			return err
		}
		if err := tx.Raw(`SELECT COALESCE(SUM(CASE WHEN p.status = ? THEN p.amount END), 0) AS captured,
				COALESCE(SUM(CASE WHEN p.status = ? THEN p.amount END), 0) AS owed,
				COALESCE(SUM(CASE WHEN p.status = ? THEN p.amount END), 0) AS refunded
			FROM payments p WHERE 1 = 1`+filter,
			append([]any{flashsale.PaymentCaptured, flashsale.PaymentRefundRequired, flashsale.PaymentRefunded}, args...)...).Scan(&out.Money).Error; err != nil {
			return err
		}
		if err := tx.Raw(`SELECT COALESCE(SUM(o.amount), 0) FROM orders o WHERE o.status = ?`+orderFilter,
			append([]any{flashsale.StatusPaid}, args...)...).Scan(&out.Money.PaidOrders).Error; err != nil {
			return err
		}
		return tx.Raw(`SELECT o.order_id, o.status AS order_status, o.amount AS order_amount, COUNT(p.id) AS captures,
				COALESCE((SELECT MIN(i.sku_id) FROM order_items i WHERE i.order_id = o.order_id), '') AS sku
			FROM orders o LEFT JOIN payments p ON p.order_id = o.order_id AND p.status = ?
			WHERE o.status = ?`+orderFilter+`
			GROUP BY o.order_id, o.status, o.amount HAVING COUNT(p.id) <> 1 ORDER BY o.order_id`,
			append([]any{flashsale.PaymentCaptured, flashsale.StatusPaid}, args...)...).Scan(&out.PaidCaptures).Error
	})
	if err != nil {
		return PaymentAudit{}, fmt.Errorf("payment audit: %w", err)
	}
	return out, nil
}

// OrderDeadline is an order's status and payment deadline.
type OrderDeadline struct {
	OrderID string           `json:"order_id"`
	SKU     string           `json:"sku_id"`
	Status  flashsale.Status `json:"status"`
	PayBy   time.Time        `json:"pay_by"`
}

// OverdueOrders lists PENDING_PAYMENT orders holding sku whose pay-by time
// is before before: their workflow should have closed them by now.
func (s *Store) OverdueOrders(ctx context.Context, sku string, before time.Time) ([]OrderDeadline, error) {
	var out []OrderDeadline
	err := s.db.WithContext(ctx).Raw(`SELECT o.order_id, i.sku_id AS sku, o.status, o.pay_by
		FROM orders o JOIN order_items i ON i.order_id = o.order_id AND i.sku_id = ?
		WHERE o.status = ? AND o.pay_by < ? ORDER BY o.pay_by`,
		sku, flashsale.StatusPendingPayment, before.UTC()).Scan(&out).Error
	if err != nil {
		return nil, fmt.Errorf("overdue orders of %s: %w", sku, err)
	}
	for i := range out {
		out[i].PayBy = out[i].PayBy.UTC()
	}
	return out, nil
}

// Deadlines returns the status and pay-by time of the given orders that
// have a row.
func (s *Store) Deadlines(ctx context.Context, orderIDs []string) (map[string]OrderDeadline, error) {
	out := make(map[string]OrderDeadline, len(orderIDs))
	for ids := range slices.Chunk(orderIDs, auditChunk) {
		var rows []OrderDeadline
		if err := s.db.WithContext(ctx).Model(&orderRow{}).Select("order_id", "status", "pay_by").
			Where("order_id IN ?", ids).Scan(&rows).Error; err != nil {
			return nil, fmt.Errorf("order deadlines: %w", err)
		}
		for _, r := range rows {
			r.PayBy = r.PayBy.UTC()
			out[r.OrderID] = r
		}
	}
	return out, nil
}
