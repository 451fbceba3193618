package orderdb

// Creating an order: its stock frozen, its lines priced, the per-user limit
// checked, all in one transaction.

import (
	"cmp"
	"context"
	"errors"
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
// The SKU's row is the hottest lock of a sale, so the transaction takes it
// last: it reads prices and limits without a lock, inserts the order, its
// items and the buyer's units (the per-user limit's row, takeHoldings),
// and only then moves the stock with the conditional UPDATE, whose round
// trip is the last before COMMIT (apply). That UPDATE also checks that the
// SKU's sale is still the one read (a PutSKU between would have changed
// price and limit): if not, the transaction runs again.
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
// a SKU without inventory row gives UnknownSKU; a SKU whose fair sale
// ended (EndSale) SoldOut; a buyer over the SKU's per-user limit
// LimitExceeded.
func (s *Store) CreateOrder(ctx context.Context, o NewOrder) (Order, error) {
	if err := o.validate(); err != nil {
		return Order{}, fmt.Errorf("create order %s: %w", o.OrderID, err)
	}
	// Locking rows in one global order (by sku id) means two multi-item
	// orders can never wait on each other in a cycle.
	items := slices.Clone(o.Items)
	slices.SortFunc(items, func(a, b flashsale.Item) int { return cmp.Compare(a.SKU, b.SKU) })
	skus := make([]string, len(items))
	for i, it := range items {
		skus[i] = it.SKU
	}
	ts := now()

	var created orderRow
	var createdItems []orderItemRow
	var err error
	// Every round reads afresh (writeTx reruns up to maxTxAttempts): at the
	// end of a sale, or while a restock or resize splits the rows, the row a
	// read chose can lose its units again and again before one is taken.
	for round := 0; round == 0 || (errors.Is(err, errRowRaced) && round < maxRowRounds); round++ {
		err = s.writeTx(ctx, readAgain, func(tx *gorm.DB) error {
			return s.createTx(tx, o, items, skus, ts, &created, &createdItems)
		})
	}
	if err != nil {
		return s.existingOrder(ctx, o, err)
	}
	return toOrder(created, createdItems, nil), nil
}

// existingOrder answers a create whose transaction failed with err: a
// retry, or a race with another attempt for the same order, fails on the
// order's unique id (or on stock that attempt already took). If the order
// exists, that is the answer; another buyer's or other lines under the id
// are OrderIDConflict. New orders, the hot path, need no lookup first.
func (s *Store) existingOrder(ctx context.Context, o NewOrder, err error) (Order, error) {
	existing, rerr := s.Order(ctx, o.OrderID)
	if rerr != nil {
		return Order{}, fmt.Errorf("create order %s: %w", o.OrderID, err)
	}
	if !existing.sameAs(o) {
		return Order{}, fmt.Errorf("create order %s: the id is taken by an order of another buyer or with other lines: %w",
			o.OrderID, flashsale.Errorf(flashsale.OrderIDConflict, "order id already used by another order"))
	}
	return existing, nil
}

// maxRowRounds bounds CreateOrder's rounds of fresh reads after bucket
// rows lost the units a read found (each round is up to maxTxAttempts).
const maxRowRounds = 8

// createTx is CreateOrder's transaction: read, insert, move the stock last.
func (s *Store) createTx(tx *gorm.DB, o NewOrder, items []flashsale.Item, skus []string, ts time.Time, created *orderRow, createdItems *[]orderItemRow) error {
	invs, buckets, err := readForCreate(tx, skus)
	if err != nil {
		return err
	}
	*created = orderRow{
		OrderID:   o.OrderID,
		UserID:    o.UserID,
		Degraded:  o.Degraded,
		Deferred:  o.Deferred,
		Status:    string(flashsale.StatusPendingPayment),
		PayBy:     o.PayBy.UTC().Truncate(time.Millisecond),
		CreatedAt: ts,
		UpdatedAt: ts,
	}
	*createdItems = make([]orderItemRow, 0, len(items))
	var window time.Duration
	created.LateCapture = true
	for _, it := range items {
		inv, ok := invs[it.SKU]
		if !ok {
			return fmt.Errorf("sku %s: %w", it.SKU, flashsale.Errorf(flashsale.UnknownSKU, "unknown sku"))
		}
		terms := inv.terms()
		if w := terms.PaymentWindow.D(); w > 0 && (window == 0 || w < window) {
			window = w
		}
		// Late money is kept only if every SKU allows it; a failed
		// payment releases if any SKU asks for it.
		created.LateCapture = created.LateCapture && terms.LatePayment == flashsale.LateCaptureIfHeld
		created.ReleaseOnFailed = created.ReleaseOnFailed || terms.ReleaseOnFailedPayment
		if o.Deferred && terms.Deduct != flashsale.DeductPayment {
			// A deferred order is of deduct=payment SKUs only. The other
			// way is allowed: an order of several SKUs, or one reserved
			// while Redis was down, holds its units as any order does.
			return fmt.Errorf("sku %s deducts %q: %w", it.SKU, cmp.Or(terms.Deduct, flashsale.DeductHold),
				flashsale.Errorf(flashsale.Invalid, "the order's deduction does not match its sku's"))
		}
		if inv.SaleEndedAt != nil {
			// The SKU's fair sale ended (EndSale): nothing is on sale
			// until a preheat, also for an order decided by MySQL alone.
			return fmt.Errorf("sku %s: sale ended: %w", it.SKU, flashsale.Errorf(flashsale.SoldOut, "sold out"))
		}
		cost, err := mulAmount(it.Quantity, inv.Price)
		if err == nil {
			created.Amount, err = addAmount(created.Amount, cost)
		}
		if err != nil {
			return fmt.Errorf("sku %s: %w", it.SKU, err)
		}
		line := orderItemRow{OrderID: o.OrderID, SKUID: it.SKU, Quantity: it.Quantity, UnitPrice: inv.Price}
		if o.Deferred {
			// Nothing is taken until the payment (payDeferred).
			*createdItems = append(*createdItems, line)
			continue
		}
		if inv.BucketRows == 0 && inv.Available < it.Quantity {
			// Short on the latest committed row: refused before
			// anything is written or locked (the stock answer comes
			// before the limit's, as it always did). Enough here is
			// only a hint; the UPDATE below decides.
			return fmt.Errorf("sku %s: want %d, available %d: %w", it.SKU, it.Quantity, inv.Available, flashsale.Errorf(flashsale.StockDrift, "insufficient stock"))
		}
		if inv.BucketRows > 0 {
			// The row is chosen before the inserts, which record it; a
			// line no single row can serve gathers the units first (a
			// rare path, at the end of a sale: it locks early).
			var ok bool
			var start *int
			if b, named := o.Buckets[it.SKU]; named {
				start = &b
			}
			if line.Bucket, ok = pickRow(o.OrderID, start, inv, buckets[it.SKU], it.Quantity); !ok {
				if err := s.gatherFor(tx, inv, buckets[it.SKU], it, o.OrderID, ts); err != nil {
					return err
				}
			}
		}
		*createdItems = append(*createdItems, line)
	}
	if window > 0 && !o.WindowFrom.IsZero() {
		// The SKU's window, read with its price: the strictest of the
		// order's SKUs holds.
		created.PayBy = o.WindowFrom.Add(window).UTC().Truncate(time.Millisecond)
	}
	// A concurrent attempt with the same order id fails here with a
	// duplicate key, before it has locked anything another order needs.
	if err := tx.Create(created).Error; err != nil {
		return err
	}
	if err := tx.Create(createdItems).Error; err != nil {
		return err
	}
	if err := takeHoldings(tx, o.UserID, items, invs); err != nil {
		return err
	}
	if o.Deferred {
		return nil
	}
	// Last, the stock: the WHERE clause is the oversell guard, evaluated
	// on the latest committed row under its exclusive lock.
	for i, it := range items {
		sale := invs[it.SKU].SaleStartedAt
		moved, err := s.apply(tx, stockMove{
			sku: it.SKU, bucket: (*createdItems)[i].Bucket, dAvail: -it.Quantity, dFrozen: it.Quantity,
			// Redis did not see a degraded order's take: flag the SKU
			// for a resync in the statement that moves the units.
			resync: o.Degraded, sale: &sale,
			ref: o.OrderID, typ: journalReserve, reason: "order created", at: ts,
		})
		if err != nil {
			return fmt.Errorf("reserve sku %s: %w", it.SKU, err)
		}
		if !moved && invs[it.SKU].BucketRows > 0 {
			// Which row, and whether the SKU still has the units, is
			// decided again on a fresh read.
			return fmt.Errorf("sku %s: %w", it.SKU, errRowRaced)
		}
		if !moved {
			return shortage(tx, it, sale)
		}
	}
	return nil
}

// errSaleMoved: a PutSKU started a new sale of a SKU between CreateOrder's
// read of its price and limit and its stock move. The transaction runs
// again on the new values.
var errSaleMoved = errors.New("the sku's sale changed during the order")

// readAgain: errors after which the transaction runs again on a fresh
// read (the sale moved, or a bucket row lost its units to another order).
func readAgain(err error) bool { return errors.Is(err, errSaleMoved) || errors.Is(err, errRowRaced) }

// gatherFor serves a line of a bucketed SKU that no single row can: when
// the SKU's rows together have the units, they are gathered onto its
// inventory row (and the line takes from there); otherwise it is short.
func (s *Store) gatherFor(tx *gorm.DB, inv inventoryRow, rows []bucketRow, it flashsale.Item, orderID string, ts time.Time) error {
	sum := inv.Available
	for _, r := range rows {
		sum += r.Available
	}
	if sum < it.Quantity {
		return fmt.Errorf("sku %s: want %d, available %d: %w", it.SKU, it.Quantity, sum, flashsale.Errorf(flashsale.StockDrift, "insufficient stock"))
	}
	return s.gather(tx, inv, rows, orderID, ts)
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
// expired and cancelled orders gave theirs back. It only reads; the guard
// is the CHECK on the buyer's row that CreateOrder writes (takeHoldings).
func checkUserLimit(tx *gorm.DB, userID string, inv inventoryRow, qty int64) error {
	held, err := unitsHeld(tx, userID, inv)
	if err != nil {
		return err
	}
	if held+qty > int64(inv.PerUserLimit) {
		return fmt.Errorf("sku %s: buyer holds %d, wants %d more, limit %d: %w",
			inv.SKUID, held, qty, inv.PerUserLimit, flashsale.Errorf(flashsale.LimitExceeded, "per-user limit exceeded"))
	}
	return nil
}

// CheckUserLimit answers, without locking anything, whether userID may
// take qty more units of skuID: LimitExceeded when that would pass the
// SKU's per-user limit in the current sale, UnknownSKU for a SKU MySQL does
// not know. It returns the SKU's inventory it read for the check, so a door
// that needs it too (the waitlist's capacity) reads the row once. A door
// asks it before it queues a buyer for units (the waitlist); CreateOrder's
// own guard (the buyer's row, takeHoldings) stays the final word.
func (s *Store) CheckUserLimit(ctx context.Context, userID, skuID string, qty int64) (Inventory, error) {
	db := s.db.WithContext(ctx)
	inv, err := takeStock(db, skuID)
	if err == nil {
		err = checkUserLimit(db, userID, inv, qty)
	}
	if err != nil {
		return Inventory{}, fmt.Errorf("check the buyer's limit: %w", err)
	}
	return inv.toInventory(), nil
}

// shortage explains why the conditional reserve on a SKU's row matched no
// row: the SKU lacks the units (StockDrift), is gone (UnknownSKU), started
// a new sale since the transaction read it (errSaleMoved) or was split
// into bucket rows (errRowRaced); the last two run again.
func shortage(tx *gorm.DB, it flashsale.Item, sale time.Time) error {
	inv, err := takeStock(tx, it.SKU)
	if err != nil {
		return fmt.Errorf("sku %s: %w", it.SKU, err)
	}
	if !inv.SaleStartedAt.Equal(sale) {
		return fmt.Errorf("sku %s: %w", it.SKU, errSaleMoved)
	}
	if inv.BucketRows > 0 {
		// Split into bucket rows (a restock or a resize mid-sale) since
		// the transaction read the SKU's row: the units moved, not gone.
		return fmt.Errorf("sku %s: %w", it.SKU, errRowRaced)
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
