package orderdb

// The per-user limit on rows of its own (migrations/00005_buyer_holdings.sql):
// a buyer's units of a SKU in its current sale, kept in step with the
// orders by the transactions that create and close them. The limit's CHECK
// on that row is the guard, so the count needs no SUM and no lock on the
// SKU's hot row.

import (
	"errors"
	"fmt"
	"strings"

	"github.com/flashsale/flashsale"

	"github.com/go-sql-driver/mysql"
	"gorm.io/gorm"
)

// limitConstraint is the CHECK that refuses units over the sale's limit.
const limitConstraint = "buyer_holdings_within_limit"

// takeHoldings adds the units of an order to its buyer's rows, one per
// SKU, in one statement (rows in sku order, the lock order). Each row's
// sale and limit are those of invs, read without a lock: the caller's
// stock move checks that the sale did not move before it commits.
// LimitExceeded when a row would pass its limit; nothing is changed then.
func takeHoldings(tx *gorm.DB, userID string, items []flashsale.Item, invs map[string]inventoryRow) error {
	var q strings.Builder
	q.WriteString("INSERT INTO buyer_holdings (sku_id, sale_started_at, user_id, held, max_held) VALUES ")
	args := make([]any, 0, 5*len(items))
	for i, it := range items {
		if i > 0 {
			q.WriteString(", ")
		}
		q.WriteString("(?, ?, ?, ?, ?)")
		inv := invs[it.SKU]
		args = append(args, it.SKU, inv.SaleStartedAt, userID, it.Quantity, inv.PerUserLimit)
	}
	q.WriteString(" ON DUPLICATE KEY UPDATE held = held + VALUES(held)")
	err := tx.Exec(q.String(), args...).Error
	if isLimitViolation(err) {
		skus := make([]string, len(items))
		for i, it := range items {
			skus[i] = fmt.Sprintf("%s (+%d, limit %d)", it.SKU, it.Quantity, invs[it.SKU].PerUserLimit)
		}
		return fmt.Errorf("buyer over the per-user limit of %s: %w", strings.Join(skus, ", "),
			flashsale.Errorf(flashsale.LimitExceeded, "per-user limit exceeded"))
	}
	if err != nil {
		return fmt.Errorf("count the buyer's units: %w", err)
	}
	return nil
}

// isLimitViolation reports whether err is the limit's CHECK refusing a
// row (MariaDB 4025, MySQL 3819; the name tells it from other CHECKs).
func isLimitViolation(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && strings.Contains(me.Message, limitConstraint)
}

// giveHoldings takes an unpaid order's units off its buyer's rows as it
// closes. A pending order holds frozen units, and PutSKU refuses to start
// a new sale while any are frozen, so the order's sale is the SKU's
// current one. A row that is missing or short (an order created by a
// release that predates the rows, during a rolling deploy) is left as it
// is: the limit is then lenient for that buyer, never stricter.
func giveHoldings(tx *gorm.DB, userID string, items []orderItemRow) error {
	if len(items) == 0 {
		return nil
	}
	skus := make([]string, len(items))
	for i, it := range items {
		skus[i] = it.SKUID
	}
	invs, err := readInventories(tx, skus)
	if err != nil {
		return err
	}
	for _, it := range items {
		inv, ok := invs[it.SKUID]
		if !ok {
			continue
		}
		err := tx.Exec(`UPDATE buyer_holdings SET held = held - ?
			WHERE sku_id = ? AND sale_started_at = ? AND user_id = ? AND held >= ?`,
			it.Quantity, it.SKUID, inv.SaleStartedAt, userID, it.Quantity).Error
		if err != nil {
			return fmt.Errorf("give back the buyer's units of sku %s: %w", it.SKUID, err)
		}
	}
	return nil
}

// unitsHeld is what userID holds of inv's SKU in its current sale.
func unitsHeld(tx *gorm.DB, userID string, inv inventoryRow) (int64, error) {
	var held int64
	err := tx.Raw(`SELECT COALESCE(MAX(held), 0) FROM buyer_holdings WHERE sku_id = ? AND sale_started_at = ? AND user_id = ?`,
		inv.SKUID, inv.SaleStartedAt, userID).Scan(&held).Error
	if err != nil {
		return 0, fmt.Errorf("sku %s: count the buyer's units: %w", inv.SKUID, err)
	}
	return held, nil
}

// readInventories reads the rows of skus without a lock (READ COMMITTED:
// the latest committed values). A SKU without a row is absent.
func readInventories(tx *gorm.DB, skus []string) (map[string]inventoryRow, error) {
	var rows []inventoryRow
	if err := tx.Where("sku_id IN ?", skus).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("read inventory: %w", err)
	}
	out := make(map[string]inventoryRow, len(rows))
	for _, r := range rows {
		out[r.SKUID] = r
	}
	return out, nil
}
