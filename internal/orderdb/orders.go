package orderdb

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

func (o NewOrder) validate() error {
	if err := checkID("order id", o.OrderID, maxIDLen); err != nil {
		return err
	}
	if err := checkID("user id", o.UserID, maxIDLen); err != nil {
		return err
	}
	if o.PayBy.IsZero() {
		return fmt.Errorf("pay-by deadline is zero: %w", ErrInvalidArgument)
	}
	if len(o.Items) == 0 {
		return fmt.Errorf("no items: %w", ErrInvalidArgument)
	}
	seen := make(map[string]bool, len(o.Items))
	for _, it := range o.Items {
		if err := checkID("sku id", it.SKU, maxIDLen); err != nil {
			return err
		}
		if it.Quantity <= 0 {
			return fmt.Errorf("sku %s: quantity %d is not positive: %w", it.SKU, it.Quantity, ErrInvalidArgument)
		}
		// One line per SKU (the schema has UNIQUE(order_id, sku_id)); merging
		// silently could hide a caller bug in quantity accounting.
		if seen[it.SKU] {
			return fmt.Errorf("sku %s listed twice: %w", it.SKU, ErrInvalidArgument)
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
// It is idempotent on the order id: if the order already exists it is
// returned unchanged and no stock moves, so a retried activity is harmless
// even when the first attempt committed and the stock has since sold out.
//
// If MySQL has fewer units than requested for any item (Redis drifted)
// nothing is written and the error wraps ErrInsufficientStock naming the SKU;
// a SKU without inventory row gives ErrUnknownSKU.
func (s *Store) CreateOrder(ctx context.Context, o NewOrder) (Order, error) {
	if err := o.validate(); err != nil {
		return Order{}, fmt.Errorf("create order %s: %w", o.OrderID, err)
	}
	// Locking inventory rows in one global order (by sku id) means two
	// multi-item orders can never wait on each other in a cycle.
	items := slices.Clone(o.Items)
	slices.SortFunc(items, func(a, b Item) int { return cmp.Compare(a.SKU, b.SKU) })
	ts := now()

	var created orderRow
	var createdItems []orderItemRow
	err := s.writeTx(ctx, nil, func(tx *gorm.DB) error {
		created = orderRow{
			OrderID:   o.OrderID,
			UserID:    o.UserID,
			Degraded:  o.Degraded,
			Status:    string(StatusPendingPayment),
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
			return existing, nil
		}
		return Order{}, fmt.Errorf("create order %s: %w", o.OrderID, err)
	}
	return toOrder(created, createdItems, nil), nil
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
	var held int64
	err := tx.Raw(`SELECT COALESCE(SUM(i.quantity), 0) FROM orders o
		JOIN order_items i ON i.order_id = o.order_id AND i.sku_id = ?
		WHERE o.user_id = ? AND o.status IN (?, ?) AND o.created_at >= ?`,
		inv.SKUID, userID, StatusPendingPayment, StatusPaid, inv.SaleStartedAt).Scan(&held).Error
	if err != nil {
		return fmt.Errorf("sku %s: count units of user %s: %w", inv.SKUID, userID, err)
	}
	if held+qty > int64(inv.PerUserLimit) {
		return fmt.Errorf("sku %s: user %s holds %d, wants %d more, limit %d: %w",
			inv.SKUID, userID, held, qty, inv.PerUserLimit, ErrLimitExceeded)
	}
	return nil
}

// shortage explains why the conditional reserve matched no row.
func shortage(tx *gorm.DB, it Item) error {
	inv, err := takeInventory(tx, it.SKU)
	if err != nil {
		return fmt.Errorf("sku %s: %w", it.SKU, err)
	}
	return fmt.Errorf("sku %s: want %d, available %d: %w", it.SKU, it.Quantity, inv.Available, ErrInsufficientStock)
}

func mulAmount(qty, price int64) (int64, error) {
	if price != 0 && qty > math.MaxInt64/price {
		return 0, fmt.Errorf("amount %d x %d overflows: %w", qty, price, ErrInvalidArgument)
	}
	return qty * price, nil
}

func addAmount(a, b int64) (int64, error) {
	if a > math.MaxInt64-b {
		return 0, fmt.Errorf("order amount overflows: %w", ErrInvalidArgument)
	}
	return a + b, nil
}

// forUpdate locks the rows a read returns until the transaction ends.
var forUpdate = clause.Locking{Strength: clause.LockingStrengthUpdate}

// takeInventory reads a SKU's inventory row, or ErrUnknownSKU.
func takeInventory(tx *gorm.DB, skuID string) (inventoryRow, error) {
	var row inventoryRow
	err := tx.Where("sku_id = ?", skuID).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return row, ErrUnknownSKU
	}
	return row, err
}

// lockInventory is takeInventory with FOR UPDATE.
func lockInventory(tx *gorm.DB, skuID string) (inventoryRow, error) {
	return takeInventory(tx.Clauses(forUpdate), skuID)
}

// takeOrder reads an order row, or ErrNotFound.
func takeOrder(tx *gorm.DB, orderID string) (orderRow, error) {
	var o orderRow
	err := tx.Where("order_id = ?", orderID).Take(&o).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return o, ErrNotFound
	}
	return o, err
}

// lockOrder reads an order row with FOR UPDATE. Every state change of an
// order starts here, so payment, close and duplicate calls for one order are
// serialised and each sees the previous one's outcome.
func lockOrder(tx *gorm.DB, orderID string) (orderRow, error) {
	return takeOrder(tx.Clauses(forUpdate), orderID)
}

func loadItems(tx *gorm.DB, orderID string) ([]orderItemRow, error) {
	var items []orderItemRow
	err := tx.Where("order_id = ?", orderID).Order("sku_id").Find(&items).Error
	return items, err
}

func loadPayments(tx *gorm.DB, orderID string) ([]paymentRow, error) {
	var pays []paymentRow
	err := tx.Where("order_id = ?", orderID).Order("id").Find(&pays).Error
	return pays, err
}

// moveFrozen moves q frozen units of every item to sold (pay) or back to
// available (release), journaling each move under the order id. Items come
// sorted by sku id (the global lock order). The frozen >= q guard turns any
// accounting bug into an error instead of a CHECK violation or silent drift.
//
// resync flags each SKU for a Redis resync in the same statement: the units
// of a degraded order coming back were never taken from Redis.
func moveFrozen(tx *gorm.DB, orderID string, items []orderItemRow, typ, reason string, ts time.Time, resync bool) error {
	target := "sold"
	if typ == journalRelease {
		target = "available"
	}
	journal := make([]journalRow, 0, len(items))
	for _, it := range items {
		cols := map[string]any{
			"frozen":     gorm.Expr("frozen - ?", it.Quantity),
			target:       gorm.Expr(target+" + ?", it.Quantity),
			"updated_at": ts,
		}
		if resync {
			cols["redis_resync"] = gorm.Expr("redis_resync + 1")
		}
		res := tx.Model(&inventoryRow{}).
			Where("sku_id = ? AND frozen >= ?", it.SKUID, it.Quantity).
			UpdateColumns(cols)
		if res.Error != nil {
			return fmt.Errorf("%s sku %s: %w", typ, it.SKUID, res.Error)
		}
		if res.RowsAffected == 0 {
			return fmt.Errorf("%s sku %s: fewer than %d units frozen: inventory out of step with orders", typ, it.SKUID, it.Quantity)
		}
		inv, err := lockInventory(tx, it.SKUID)
		if err != nil {
			return fmt.Errorf("%s sku %s: %w", typ, it.SKUID, err)
		}
		var dAvail, dSold int64
		if typ == journalRelease {
			dAvail = it.Quantity
		} else {
			dSold = it.Quantity
		}
		journal = append(journal, journalFor(inv, orderID, typ, dAvail, -it.Quantity, dSold, reason, ts))
	}
	if len(journal) == 0 {
		return nil
	}
	return tx.Create(&journal).Error
}

// ConfirmPayment applies money received for an order, exactly once per
// transaction id, with the order row locked:
//
//   - txnID already recorded for this order: its recorded outcome,
//     Duplicate=true, no change.
//   - txnID already recorded for another order: a *TransactionConflictError
//     (ErrTransactionConflict), nothing written, this order unchanged.
//   - order PENDING_PAYMENT and amount equal: payment CAPTURED, frozen ->
//     sold for every item (SELL journal), order PAID.
//   - order PENDING_PAYMENT and amount different: ErrAmountMismatch, nothing
//     written (the caller decides whether to record a refund).
//   - order already PAID by another transaction, EXPIRED or CANCELLED: the
//     payment is recorded as REFUND_REQUIRED with the reason, and returned
//     without error; the caller checks Payment.Status.
//   - unknown order: ErrNotFound, nothing written (see RecordRefund).
//
// A payment that arrives after PayBy but before CloseOrder ran is captured:
// the order workflow's CloseOrder, not the clock, decides expiry, and the
// order lock makes exactly one of the two win.
//
// A database answer that no retry can change wraps ErrPermanent (classify).
func (s *Store) ConfirmPayment(ctx context.Context, orderID, txnID string, amount int64) (PaymentResult, error) {
	if err := checkID("order id", orderID, maxIDLen); err != nil {
		return PaymentResult{}, fmt.Errorf("confirm payment %s for order %s: %w", txnID, orderID, err)
	}
	if err := checkID("transaction id", txnID, maxTxnIDLen); err != nil {
		return PaymentResult{}, fmt.Errorf("confirm payment %s for order %s: %w", txnID, orderID, err)
	}
	if amount < 0 {
		return PaymentResult{}, fmt.Errorf("confirm payment %s for order %s: amount %d is negative: %w", txnID, orderID, amount, ErrInvalidArgument)
	}

	var res PaymentResult
	// A duplicate key on the payment insert means a concurrent RecordRefund
	// stored this transaction id first; the rerun reports it as a duplicate.
	err := s.writeTx(ctx, isDuplicateKey, func(tx *gorm.DB) error {
		res = PaymentResult{}
		ord, err := lockOrder(tx, orderID)
		if err != nil {
			return err
		}
		items, err := loadItems(tx, orderID)
		if err != nil {
			return err
		}
		pays, err := loadPayments(tx, orderID)
		if err != nil {
			return err
		}

		var prior paymentRow
		err = tx.Where("transaction_id = ?", txnID).Take(&prior).Error
		switch {
		case err == nil:
			if prior.OrderID != orderID {
				// The money is the other order's; this order must stay
				// as it is and payable with a transaction of its own.
				return &TransactionConflictError{TransactionID: txnID, OrderID: orderID, RecordedFor: prior.OrderID}
			}
			res = PaymentResult{Order: toOrder(ord, items, pays), Payment: prior.toPayment(), Duplicate: true}
			return nil
		case !errors.Is(err, gorm.ErrRecordNotFound):
			return err
		}

		ts := now()
		pay := paymentRow{TransactionID: txnID, OrderID: orderID, Amount: amount, CreatedAt: ts}
		switch Status(ord.Status) {
		case StatusPendingPayment:
			if amount != ord.Amount {
				return fmt.Errorf("paid %d, order amount %d: %w", amount, ord.Amount, ErrAmountMismatch)
			}
			pay.Status = string(PaymentCaptured)
			if err := tx.Create(&pay).Error; err != nil {
				return err
			}
			if err := moveFrozen(tx, orderID, items, journalSell, "paid by "+txnID, ts, false); err != nil {
				return err
			}
			upd := tx.Model(&orderRow{}).
				Where("order_id = ? AND status = ?", orderID, StatusPendingPayment).
				UpdateColumns(map[string]any{"status": StatusPaid, "updated_at": ts})
			if upd.Error != nil {
				return upd.Error
			}
			if upd.RowsAffected != 1 {
				// Impossible while we hold the row lock; fail loudly rather
				// than commit stock moves for an order that did not change.
				return fmt.Errorf("order changed under lock")
			}
			ord.Status, ord.UpdatedAt = string(StatusPaid), ts
		case StatusPaid:
			pay.Status = string(PaymentRefundRequired)
			pay.Reason = "order already paid"
			for _, p := range pays {
				if p.Status == string(PaymentCaptured) {
					pay.Reason = "order already paid by transaction " + p.TransactionID
					break
				}
			}
		case StatusExpired, StatusCancelled:
			pay.Status = string(PaymentRefundRequired)
			pay.Reason = "order " + ord.Status
			if ord.Reason != "" {
				pay.Reason += ": " + ord.Reason
			}
		default:
			return fmt.Errorf("order has unknown status %q", ord.Status)
		}
		pay.Reason = truncate(pay.Reason, maxReasonLen)
		if pay.Status == string(PaymentRefundRequired) {
			if err := tx.Create(&pay).Error; err != nil {
				return err
			}
		}
		res = PaymentResult{Order: toOrder(ord, items, append(pays, pay)), Payment: pay.toPayment()}
		return nil
	})
	if err != nil {
		return PaymentResult{}, fmt.Errorf("confirm payment %s for order %s: %w", txnID, orderID, err)
	}
	return res, nil
}

// CloseOrder ends an unpaid order as EXPIRED or CANCELLED and gives its
// frozen units back to available (RELEASE journal). It is a compare-and-set
// from PENDING_PAYMENT under the order lock, so it can never release units of
// an order a concurrent ConfirmPayment has just paid.
//
// Idempotent: an order already in status to is returned unchanged. A PAID
// order gives ErrOrderPaid, one closed with the other status ErrOrderClosed,
// an unknown one ErrNotFound. A payment received by its deadline that no
// payments row answers yet gives a *PaymentReceivedError and changes
// nothing (see RecordReceipt).
func (s *Store) CloseOrder(ctx context.Context, orderID string, to Status, reason string) (Order, error) {
	return s.closeOrder(ctx, orderID, to, reason, false)
}

// CloseOrderIgnoringReceipts is CloseOrder without the receipt check: for
// an order whose workflow already tried to apply the payment received in
// time and got no answer from the database by its bound. The payment stays
// the workflow's, settled late (a refund) unless it committed after all,
// which this compare-and-set then finds (ErrOrderPaid).
func (s *Store) CloseOrderIgnoringReceipts(ctx context.Context, orderID string, to Status, reason string) (Order, error) {
	return s.closeOrder(ctx, orderID, to, reason, true)
}

func (s *Store) closeOrder(ctx context.Context, orderID string, to Status, reason string, ignoreReceipts bool) (Order, error) {
	if err := checkID("order id", orderID, maxIDLen); err != nil {
		return Order{}, fmt.Errorf("close order %s: %w", orderID, err)
	}
	if to != StatusExpired && to != StatusCancelled {
		return Order{}, fmt.Errorf("close order %s: target status %q is not EXPIRED or CANCELLED: %w", orderID, to, ErrInvalidArgument)
	}
	reason = truncate(reason, maxReasonLen)

	var out Order
	err := s.writeTx(ctx, nil, func(tx *gorm.DB) error {
		ord, err := lockOrder(tx, orderID)
		if err != nil {
			return err
		}
		switch Status(ord.Status) {
		case to:
			out, err = loadOrder(tx, ord)
			return err
		case StatusPaid:
			return ErrOrderPaid
		case StatusExpired, StatusCancelled:
			return fmt.Errorf("already %s: %w", ord.Status, ErrOrderClosed)
		case StatusPendingPayment:
		default:
			return fmt.Errorf("order has unknown status %q", ord.Status)
		}
		// Money that reached us in time but not yet the order (Temporal
		// could not deliver it before the deadline) keeps the order open:
		// the workflow applies it instead of closing. Checked under the
		// order lock, so a receipt is either seen here or recorded after
		// the order closed (and then answered as late money).
		if !ignoreReceipts {
			r, err := unansweredReceipt(tx, orderID, ord.PayBy)
			if err != nil {
				return err
			}
			if r != nil {
				return &PaymentReceivedError{Receipt: *r}
			}
		}

		ts := now()
		upd := tx.Model(&orderRow{}).
			Where("order_id = ? AND status = ?", orderID, StatusPendingPayment).
			UpdateColumns(map[string]any{"status": to, "reason": reason, "closed_at": ts, "updated_at": ts})
		if upd.Error != nil {
			return upd.Error
		}
		if upd.RowsAffected != 1 {
			return fmt.Errorf("order changed under lock")
		}
		items, err := loadItems(tx, orderID)
		if err != nil {
			return err
		}
		if err := moveFrozen(tx, orderID, items, journalRelease, string(to)+": "+reason, ts, ord.Degraded); err != nil {
			return err
		}
		pays, err := loadPayments(tx, orderID)
		if err != nil {
			return err
		}
		ord.Status, ord.Reason, ord.ClosedAt, ord.UpdatedAt = string(to), reason, &ts, ts
		out = toOrder(ord, items, pays)
		return nil
	})
	if err != nil {
		return Order{}, fmt.Errorf("close order %s: %w", orderID, err)
	}
	return out, nil
}

// AbandonOrder ends an order whose creation failed past its budget and so
// may or may not have committed: an existing PENDING_PAYMENT order is
// closed as CANCELLED (CloseOrder, units back to available); a missing one
// gets a tombstone, a CANCELLED order row without items. A CreateOrder
// attempt of the same id still in flight (its COMMIT delayed in a network
// that has just come back) then fails on the unique order id and rolls its
// stock moves back, instead of committing an order nobody will pay, expire
// or release. Idempotent: a repeat finds the order or tombstone closed.
func (s *Store) AbandonOrder(ctx context.Context, orderID, reason string) (Order, error) {
	o, err := s.CloseOrder(ctx, orderID, StatusCancelled, reason)
	if !errors.Is(err, ErrNotFound) {
		return o, err
	}
	ts := now()
	tomb := orderRow{
		OrderID: orderID, Status: string(StatusCancelled), PayBy: ts,
		Reason:    truncate("never created: "+reason, maxReasonLen),
		CreatedAt: ts, UpdatedAt: ts, ClosedAt: &ts,
	}
	err = s.db.WithContext(ctx).Create(&tomb).Error
	switch {
	case isDuplicateKey(err):
		// The late CreateOrder committed between the two statements:
		// close it like any other.
		return s.CloseOrder(ctx, orderID, StatusCancelled, reason)
	case err != nil:
		return Order{}, fmt.Errorf("abandon order %s: write tombstone: %w", orderID, classify(err, nil))
	}
	return toOrder(tomb, nil, nil), nil
}

// RecordRefund records money that arrived for an order that cannot take it
// (closed, rejected, unknown) as REFUND_REQUIRED, whatever p.Status says. It
// is exactly-once per transaction id: a repeat returns the row already
// stored, which may be CAPTURED if ConfirmPayment took that transaction, so
// the caller must look at the returned Status before refunding. Inventory is
// never touched.
//
// When the transaction id is stored for another order, nothing is recorded
// for p.OrderID and the error is a *TransactionConflictError
// (ErrTransactionConflict): that row is the other order's money, and
// answering "refund" for it would refund the other order's sale. A database
// answer that no retry can change wraps ErrPermanent.
func (s *Store) RecordRefund(ctx context.Context, p Payment) (Payment, error) {
	if err := checkID("transaction id", p.TransactionID, maxTxnIDLen); err != nil {
		return Payment{}, fmt.Errorf("record refund %s for order %s: %w", p.TransactionID, p.OrderID, err)
	}
	if err := checkID("order id", p.OrderID, maxIDLen); err != nil {
		return Payment{}, fmt.Errorf("record refund %s for order %s: %w", p.TransactionID, p.OrderID, err)
	}
	if p.Amount < 0 {
		return Payment{}, fmt.Errorf("record refund %s for order %s: amount %d is negative: %w", p.TransactionID, p.OrderID, p.Amount, ErrInvalidArgument)
	}
	row := paymentRow{
		TransactionID: p.TransactionID,
		OrderID:       p.OrderID,
		Amount:        p.Amount,
		Status:        string(PaymentRefundRequired),
		Reason:        truncate(p.Reason, maxReasonLen),
		CreatedAt:     now(),
	}
	db := s.db.WithContext(ctx)
	// ON DUPLICATE KEY UPDATE id=id instead of INSERT IGNORE: IGNORE would
	// also turn CHECK and data errors into warnings. The row is then read
	// back rather than trusting the affected-rows count, which MariaDB's
	// INSERT ... RETURNING (used by GORM) does not report for a no-op.
	if err := db.Clauses(clause.OnConflict{DoNothing: true}).Create(&row).Error; err != nil {
		return Payment{}, fmt.Errorf("record refund %s for order %s: %w", p.TransactionID, p.OrderID, classify(err, nil))
	}
	var stored paymentRow
	if err := db.Where("transaction_id = ?", p.TransactionID).Take(&stored).Error; err != nil {
		return Payment{}, fmt.Errorf("record refund %s for order %s: %w", p.TransactionID, p.OrderID, classify(err, nil))
	}
	if stored.OrderID != p.OrderID {
		return Payment{}, fmt.Errorf("record refund %s for order %s: %w", p.TransactionID, p.OrderID,
			&TransactionConflictError{TransactionID: p.TransactionID, OrderID: p.OrderID, RecordedFor: stored.OrderID})
	}
	return stored.toPayment(), nil
}

// Order returns an order with its items and payments, or ErrNotFound.
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
