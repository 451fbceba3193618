package orderdb

// The locked reads every write starts from, and the move of frozen units
// that paying and closing share. Lock order: the orders row, then inventory
// rows by ascending sku_id (see the package comment).

import (
	"errors"
	"fmt"
	"time"

	"github.com/flashsale/flashsale"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// forUpdate locks the rows a read returns until the transaction ends.
var forUpdate = clause.Locking{Strength: clause.LockingStrengthUpdate}

// takeInventory reads a SKU's inventory row, or UnknownSKU.
func takeInventory(tx *gorm.DB, skuID string) (inventoryRow, error) {
	var row inventoryRow
	err := tx.Where("sku_id = ?", skuID).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return row, flashsale.Errorf(flashsale.UnknownSKU, "unknown sku")
	}
	return row, err
}

// lockInventory is takeInventory with FOR UPDATE.
func lockInventory(tx *gorm.DB, skuID string) (inventoryRow, error) {
	return takeInventory(tx.Clauses(forUpdate), skuID)
}

// takeOrder reads an order row, or OrderNotFound.
func takeOrder(tx *gorm.DB, orderID string) (orderRow, error) {
	var o orderRow
	err := tx.Where("order_id = ?", orderID).Take(&o).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return o, flashsale.Errorf(flashsale.OrderNotFound, "not found")
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
// sorted by sku id (the global lock order), and the moves are the
// transaction's last statements (apply). The frozen >= q guard turns any
// accounting bug into an error instead of a CHECK violation or silent drift.
//
// resync flags each SKU for a Redis resync in the same statement: the units
// of a degraded order coming back were never taken from Redis.
func (s *Store) moveFrozen(tx *gorm.DB, orderID string, items []orderItemRow, typ, reason string, ts time.Time, resync bool) error {
	for _, it := range items {
		m := stockMove{sku: it.SKUID, bucket: it.Bucket, dFrozen: -it.Quantity, resync: resync, ref: orderID, typ: typ,
			reason: truncate(reason, flashsale.MaxReasonLength), at: ts}
		if typ == journalRelease {
			m.dAvail = it.Quantity
		} else {
			m.dSold = it.Quantity
		}
		moved, err := s.apply(tx, m)
		if err != nil {
			return fmt.Errorf("%s: %w", typ, err)
		}
		if !moved {
			return fmt.Errorf("%s sku %s: fewer than %d units frozen: inventory out of step with orders", typ, it.SKUID, it.Quantity)
		}
	}
	return nil
}
