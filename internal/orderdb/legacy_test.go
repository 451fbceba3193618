//go:build integration

package orderdb

// The statement orders the hot-row benchmark compares the store's with
// (BenchmarkHotRow). Test code only: the product runs CreateOrder.

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/flashsale/flashsale"

	"gorm.io/gorm"
)

// CreateOrderLegacy is CreateOrder as it was at 5a438e2, before issue 26:
// the conditional UPDATE of the SKU's row first, then under its lock a
// SELECT ... FOR UPDATE for the price, the per-user SUM and three INSERTs.
// It writes no buyer_holdings row.
func (s *Store) CreateOrderLegacy(ctx context.Context, o NewOrder) (Order, error) {
	if err := o.validate(); err != nil {
		return Order{}, fmt.Errorf("create order %s: %w", o.OrderID, err)
	}
	// Locking inventory rows in one global order (by sku id) means two
	// multi-item orders can never wait on each other in a cycle.
	items := slices.Clone(o.Items)
	slices.SortFunc(items, func(a, b flashsale.Item) int { return cmp.Compare(a.SKU, b.SKU) })
	ts := now()

	var created orderRow
	var createdItems []orderItemRow
	err := s.writeTx(ctx, nil, func(tx *gorm.DB) error {
		created = orderRow{
			OrderID:   o.OrderID,
			UserID:    o.UserID,
			Degraded:  o.Degraded,
			Status:    string(flashsale.StatusPendingPayment),
			PayBy:     o.PayBy.UTC().Truncate(time.Millisecond),
			CreatedAt: ts,
			UpdatedAt: ts,
		}
		createdItems = make([]orderItemRow, 0, len(items))
		journal := make([]journalRow, 0, len(items))
		for _, it := range items {
			// The WHERE clause is the oversell guard: it is evaluated on the
			// latest committed row under its exclusive lock.
			cols := map[string]any{
				"available":  gorm.Expr("available - ?", it.Quantity),
				"frozen":     gorm.Expr("frozen + ?", it.Quantity),
				"updated_at": ts,
			}
			if o.Degraded {
				// Redis did not see this take: flag the SKU for a resync
				// in the same statement that moves the units.
				cols["redis_resync"] = gorm.Expr("redis_resync + 1")
			}
			res := tx.Model(&inventoryRow{}).
				Where("sku_id = ? AND available >= ?", it.SKU, it.Quantity).
				UpdateColumns(cols)
			if res.Error != nil {
				return fmt.Errorf("reserve sku %s: %w", it.SKU, res.Error)
			}
			if res.RowsAffected == 0 {
				return legacyShortage(tx, it)
			}
			// Read back under the lock we now hold: the price cannot change
			// before commit, and the values feed the journal.
			inv, err := lockInventory(tx, it.SKU)
			if err != nil {
				return fmt.Errorf("reserve sku %s: %w", it.SKU, err)
			}
			line, err := mulAmount(it.Quantity, inv.Price)
			if err == nil {
				created.Amount, err = addAmount(created.Amount, line)
			}
			if err != nil {
				return fmt.Errorf("sku %s: %w", it.SKU, err)
			}
			if err := legacyCheckUserLimit(tx, o.UserID, inv, it.Quantity); err != nil {
				return err
			}
			createdItems = append(createdItems, orderItemRow{
				OrderID: o.OrderID, SKUID: it.SKU, Quantity: it.Quantity, UnitPrice: inv.Price,
			})
			journal = append(journal, journalFor(inv, o.OrderID, journalReserve,
				-it.Quantity, it.Quantity, 0, "order created", ts))
		}
		// A concurrent attempt with the same order id fails here with a
		// duplicate key, which rolls back its stock moves above.
		if err := tx.Create(&created).Error; err != nil {
			return err
		}
		if err := tx.Create(&createdItems).Error; err != nil {
			return err
		}
		return tx.Create(&journal).Error
	})
	if err != nil {
		return s.existingOrder(ctx, o, err)
	}
	return toOrder(created, createdItems, nil), nil
}

func legacyShortage(tx *gorm.DB, it flashsale.Item) error {
	inv, err := takeInventory(tx, it.SKU)
	if err != nil {
		return fmt.Errorf("sku %s: %w", it.SKU, err)
	}
	return fmt.Errorf("sku %s: want %d, available %d: %w", it.SKU, it.Quantity, inv.Available, flashsale.Errorf(flashsale.StockDrift, "insufficient stock"))
}

// legacyCheckUserLimit is the per-user SUM the limit was before its rows.
func legacyCheckUserLimit(tx *gorm.DB, userID string, inv inventoryRow, qty int64) error {
	var held int64
	err := tx.Raw(`SELECT COALESCE(SUM(i.quantity), 0) FROM orders o
		JOIN order_items i ON i.order_id = o.order_id AND i.sku_id = ?
		WHERE o.user_id = ? AND o.status IN (?, ?) AND o.created_at >= ?`,
		inv.SKUID, userID, flashsale.StatusPendingPayment, flashsale.StatusPaid, inv.SaleStartedAt).Scan(&held).Error
	if err != nil {
		return err
	}
	if held+qty > int64(inv.PerUserLimit) {
		return flashsale.Errorf(flashsale.LimitExceeded, "per-user limit exceeded")
	}
	return nil
}

// CreateOrderForUpdate is the textbook pessimistic order: lock the SKU's
// row with SELECT ... FOR UPDATE, decide in the application, UPDATE it,
// count the buyer's units and insert, all under the lock.
func (s *Store) CreateOrderForUpdate(ctx context.Context, o NewOrder) (Order, error) {
	items := slices.Clone(o.Items)
	slices.SortFunc(items, func(a, b flashsale.Item) int { return cmp.Compare(a.SKU, b.SKU) })
	ts := now()
	created := orderRow{OrderID: o.OrderID, UserID: o.UserID, Status: string(flashsale.StatusPendingPayment),
		PayBy: o.PayBy.UTC().Truncate(time.Millisecond), CreatedAt: ts, UpdatedAt: ts}
	var createdItems []orderItemRow
	err := s.writeTx(ctx, nil, func(tx *gorm.DB) error {
		created.Amount = 0
		createdItems = createdItems[:0]
		var journal []journalRow
		for _, it := range items {
			inv, err := lockInventory(tx, it.SKU)
			if err != nil {
				return err
			}
			if inv.Available < it.Quantity {
				return flashsale.Errorf(flashsale.StockDrift, "insufficient stock")
			}
			if err := legacyCheckUserLimit(tx, o.UserID, inv, it.Quantity); err != nil {
				return err
			}
			err = tx.Model(&inventoryRow{}).Where("sku_id = ?", it.SKU).UpdateColumns(map[string]any{
				"available":  gorm.Expr("available - ?", it.Quantity),
				"frozen":     gorm.Expr("frozen + ?", it.Quantity),
				"updated_at": ts,
			}).Error
			if err != nil {
				return err
			}
			inv.Available -= it.Quantity
			inv.Frozen += it.Quantity
			created.Amount += it.Quantity * inv.Price
			createdItems = append(createdItems, orderItemRow{OrderID: o.OrderID, SKUID: it.SKU, Quantity: it.Quantity, UnitPrice: inv.Price})
			journal = append(journal, journalFor(inv, o.OrderID, journalReserve, -it.Quantity, it.Quantity, 0, "order created", ts))
		}
		if err := tx.Create(&created).Error; err != nil {
			return err
		}
		if err := tx.Create(&createdItems).Error; err != nil {
			return err
		}
		return tx.Create(&journal).Error
	})
	if err != nil {
		return Order{}, fmt.Errorf("create order %s: %w", o.OrderID, err)
	}
	return toOrder(created, createdItems, nil), nil
}
