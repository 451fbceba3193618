package orderdb

// Creating an order: its stock frozen, its lines priced, the per-user limit
// checked, all in one transaction.

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/flashsale/flashsale"

	"gorm.io/gorm"
)

func (o NewOrder) validate() error {
	if err := flashsale.CheckID("order_id", o.OrderID, flashsale.MaxIDLength); err != nil {
		return err
	}
	if err := flashsale.CheckID("user_id", o.UserID, flashsale.MaxIDLength); err != nil {
		return err
	}
	if o.PayBy.IsZero() {
		return invalidf("pay-by deadline is zero")
	}
	if len(o.Items) == 0 {
		return invalidf("no items")
	}
	seen := make(map[string]bool, len(o.Items))
	for _, it := range o.Items {
		if err := flashsale.CheckID("sku_id", it.SKU, flashsale.MaxIDLength); err != nil {
			return err
		}
		if it.Quantity <= 0 {
			return invalidf("sku %s: quantity %d is not positive", it.SKU, it.Quantity)
		}
		// One line per SKU (the schema has UNIQUE(order_id, sku_id)); merging
		// silently could hide a caller bug in quantity accounting.
		if seen[it.SKU] {
			return invalidf("sku %s listed twice", it.SKU)
		}
		seen[it.SKU] = true
	}
	return nil
}

// CreateOrder reserves stock for a new order in one local transaction:
// available -> frozen for every item, the order and its items at the current
// prices, and a RESERVE journal entry per item. The order starts as
// PENDING_PAYMENT.
//
// It is idempotent on the order id: if the order already exists for the
// same buyer and the same lines it is returned unchanged and no stock moves,
// so a retried activity is harmless even when the first attempt committed
// and the stock has since sold out. An existing order of another buyer or
// other lines is not this order's retry but another order under the same id:
// that is OrderIDConflict, and nothing moves (the caller gives back what it
// reserved for the new one). A waitlist offer's origin is in its id
// (flashsale.WaitlistOrderID is a digest of the released order's id), so
// the same id means the same origin.
//
// If MySQL has fewer units than requested for any item (Redis drifted)
// nothing is written and the error wraps StockDrift naming the SKU;
// a SKU without inventory row gives UnknownSKU.
func (s *Store) CreateOrder(ctx context.Context, o NewOrder) (Order, error) {
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
				return shortage(tx, it)
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
			if err := checkUserLimit(tx, o.UserID, inv, it.Quantity); err != nil {
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
		// A retry, or a race with another attempt for the same order: the
		// order insert failed on its unique id, or the stock or limit check
		// because that attempt already took the units. If the order exists,
		// that is the answer. New orders, the hot path, need no lookup first.
		if existing, rerr := s.Order(ctx, o.OrderID); rerr == nil {
			if !existing.sameAs(o) {
				return Order{}, fmt.Errorf("create order %s: the id is taken by an order of user %s with other lines: %w",
					o.OrderID, existing.UserID, flashsale.Errorf(flashsale.OrderIDConflict, "order id already used by another order"))
			}
			return existing, nil
		}
		return Order{}, fmt.Errorf("create order %s: %w", o.OrderID, err)
	}
	return toOrder(created, createdItems, nil), nil
}

// sameAs reports whether the stored order is what o asks for: the same
// buyer and the same quantity of the same SKUs (prices are the store's).
func (ord Order) sameAs(o NewOrder) bool {
	if ord.UserID == "" && len(ord.Items) == 0 {
		// AbandonOrder's tombstone names no buyer: it stands for
		// whichever attempt of this id was abandoned.
		return true
	}
	if ord.UserID != o.UserID || len(ord.Items) != len(o.Items) {
		return false
	}
	for _, it := range o.Items {
		i := slices.IndexFunc(ord.Items, func(s flashsale.Item) bool { return s.SKU == it.SKU })
		if i < 0 || ord.Items[i].Quantity != it.Quantity {
			return false
		}
	}
	return true
}

// checkUserLimit refuses an item that would give the user more units of the
// SKU than its per_user_limit in the current sale (orders created since the
// SKU's last PutSKU). Units of PENDING_PAYMENT and PAID orders count;
// expired and cancelled orders gave theirs back.
//
// It must run after the conditional UPDATE of the SKU's inventory row: this
// transaction then holds that row's exclusive lock, so every other
// CreateOrder for the SKU waits behind it, and under READ COMMITTED the count
// sees every order those committed before. Two concurrent orders of one user
// can therefore never both pass, however many API instances or Redis
// buckets let them through. The count is a few index lookups (orders by
// user_id, then order_items by its (order_id, sku_id) key), which keeps the
// hot row's lock short without a new index.
func checkUserLimit(tx *gorm.DB, userID string, inv inventoryRow, qty int64) error {
	held, err := unitsHeld(tx, userID, inv)
	if err != nil {
		return err
	}
	if held+qty > int64(inv.PerUserLimit) {
		return fmt.Errorf("sku %s: user %s holds %d, wants %d more, limit %d: %w",
			inv.SKUID, userID, held, qty, inv.PerUserLimit, flashsale.Errorf(flashsale.LimitExceeded, "per-user limit exceeded"))
	}
	return nil
}

// unitsHeld counts the units of inv's SKU that userID holds in the current
// sale: those of PENDING_PAYMENT and PAID orders created since the SKU's
// last PutSKU.
func unitsHeld(tx *gorm.DB, userID string, inv inventoryRow) (int64, error) {
	var held int64
	err := tx.Raw(`SELECT COALESCE(SUM(i.quantity), 0) FROM orders o
		JOIN order_items i ON i.order_id = o.order_id AND i.sku_id = ?
		WHERE o.user_id = ? AND o.status IN (?, ?) AND o.created_at >= ?`,
		inv.SKUID, userID, flashsale.StatusPendingPayment, flashsale.StatusPaid, inv.SaleStartedAt).Scan(&held).Error
	if err != nil {
		return 0, fmt.Errorf("sku %s: count units of user %s: %w", inv.SKUID, userID, err)
	}
	return held, nil
}

// CheckUserLimit answers, without locking anything, whether userID may
// take qty more units of skuID: LimitExceeded when that would pass the
// SKU's per-user limit in the current sale, UnknownSKU for a SKU MySQL does
// not know. It returns the SKU's inventory it read for the check, so a door
// that needs it too (the waitlist's capacity) reads the row once. A door
// asks it before it queues a buyer for units (the waitlist); CreateOrder's
// own check under the row lock stays the guard.
func (s *Store) CheckUserLimit(ctx context.Context, userID, skuID string, qty int64) (Inventory, error) {
	db := s.db.WithContext(ctx)
	inv, err := takeInventory(db, skuID)
	if err == nil {
		err = checkUserLimit(db, userID, inv, qty)
	}
	if err != nil {
		return Inventory{}, fmt.Errorf("check limit of user %s: %w", userID, err)
	}
	return inv.toInventory(), nil
}

// shortage explains why the conditional reserve matched no row.
func shortage(tx *gorm.DB, it flashsale.Item) error {
	inv, err := takeInventory(tx, it.SKU)
	if err != nil {
		return fmt.Errorf("sku %s: %w", it.SKU, err)
	}
	return fmt.Errorf("sku %s: want %d, available %d: %w", it.SKU, it.Quantity, inv.Available, flashsale.Errorf(flashsale.StockDrift, "insufficient stock"))
}

func mulAmount(qty, price int64) (int64, error) {
	if price != 0 && qty > math.MaxInt64/price {
		return 0, invalidf("amount %d x %d overflows", qty, price)
	}
	return qty * price, nil
}

func addAmount(a, b int64) (int64, error) {
	if a > math.MaxInt64-b {
		return 0, invalidf("order amount overflows")
	}
	return a + b, nil
}
