package orderdb

import (
	"context"
	"errors"
	"fmt"

	"gorm.io/gorm"

	"github.com/flashsale/flashsale"
)

// Carve takes qty units of sku's available stock out of it, once per ref:
// its total and available drop by qty, journaled RESTOCK -qty under ref
// (a campaign's allocation carved from a SKU, or what is left of it given
// back: Restock adds them where they go). Its bucket rows' available units
// are gathered into its row first, so the carve sees them all; the next
// preheat splits them again. StockDrift when fewer than qty are available;
// a repeat of ref answers the first call's stock (carved false).
func (s *Store) Carve(ctx context.Context, sku string, qty int64, ref string) (inv Inventory, carved bool, err error) {
	if err := flashsale.CheckID("ref", ref, flashsale.MaxIDLength); err != nil {
		return Inventory{}, false, fmt.Errorf("carve %s: %w", sku, err)
	}
	if qty <= 0 {
		return Inventory{}, false, fmt.Errorf("carve %s: %w", sku, invalidf("quantity %d is not positive", qty))
	}
	err = s.writeTx(ctx, isDuplicateKey, func(tx *gorm.DB) error {
		row, err := lockInventory(tx, sku)
		if err != nil {
			return err
		}
		var prior journalRow
		err = tx.Where("ref_id = ? AND sku_id = ? AND type = ?", ref, sku, journalRestock).Take(&prior).Error
		switch {
		case err == nil:
			carved = false
		case !errors.Is(err, gorm.ErrRecordNotFound):
			return err
		default:
			ts := now()
			if row.BucketRows > 0 {
				if _, err := s.collect(tx, row, ref, ts); err != nil {
					return err
				}
			}
			moved, err := s.apply(tx, stockMove{sku: sku, dTotal: -qty, dAvail: -qty, ref: ref, typ: journalRestock,
				reason: fmt.Sprintf("carve -%d", qty), at: ts})
			if err != nil {
				return err
			}
			if !moved {
				return flashsale.Errorf(flashsale.StockDrift, "%s has fewer than %d units available to carve", sku, qty)
			}
			carved = true
		}
		stock, err := takeStock(tx, sku)
		inv = stock.toInventory()
		return err
	})
	if err != nil {
		return Inventory{}, false, fmt.Errorf("carve %d of %s: %w", qty, sku, err)
	}
	return inv, carved, nil
}
