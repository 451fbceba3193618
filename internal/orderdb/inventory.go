package orderdb

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

func (k SKU) validate() error {
	if err := checkID("sku id", k.ID, maxIDLen); err != nil {
		return err
	}
	switch {
	case k.Total < 0:
		return fmt.Errorf("total %d is negative: %w", k.Total, ErrInvalidArgument)
	case k.Price < 0:
		return fmt.Errorf("price %d is negative: %w", k.Price, ErrInvalidArgument)
	case k.Buckets < 1 || k.Buckets > maxBuckets:
		return fmt.Errorf("buckets %d not in 1..%d: %w", k.Buckets, maxBuckets, ErrInvalidArgument)
	case k.PerUserLimit < 1:
		return fmt.Errorf("per-user limit %d is below 1: %w", k.PerUserLimit, ErrInvalidArgument)
	}
	return nil
}

// PutSKU creates a SKU, or resets an existing one before a sale: available =
// total, frozen = sold = 0, with the new price, bucket count and per-user
// limit. Sold units are forgotten by the row but stay in the journal.
//
// It refuses with ErrSKUInUse while unpaid orders hold units (frozen > 0):
// zeroing frozen would let a later payment or expiry of those orders move
// units that no longer exist, breaking the stock invariants.
func (s *Store) PutSKU(ctx context.Context, sku SKU) (Inventory, error) {
	if err := sku.validate(); err != nil {
		return Inventory{}, fmt.Errorf("put sku %s: %w", sku.ID, err)
	}
	ts := now()
	// Nanoseconds, not the millisecond timestamp, so two resets in the same
	// millisecond still get distinct journal keys.
	ref := fmt.Sprintf("reset-%d", time.Now().UnixNano())

	var out inventoryRow
	err := s.writeTx(ctx, isDuplicateKey, func(tx *gorm.DB) error {
		var cur inventoryRow
		err := tx.Clauses(clause.Locking{Strength: clause.LockingStrengthUpdate}).
			Where("sku_id = ?", sku.ID).Take(&cur).Error
		exists := err == nil
		if err != nil && !errors.Is(err, gorm.ErrRecordNotFound) {
			return err
		}
		if exists && cur.Frozen > 0 {
			return fmt.Errorf("%d units reserved by unpaid orders: %w", cur.Frozen, ErrSKUInUse)
		}

		out = inventoryRow{
			SKUID:        sku.ID,
			Total:        sku.Total,
			Available:    sku.Total,
			Price:        sku.Price,
			BucketCount:  sku.Buckets,
			PerUserLimit: sku.PerUserLimit,
			CreatedAt:    ts,
			UpdatedAt:    ts,
		}
		if exists {
			out.CreatedAt = cur.CreatedAt
			err = tx.Model(&inventoryRow{}).Where("sku_id = ?", sku.ID).UpdateColumns(map[string]any{
				"total":          out.Total,
				"available":      out.Available,
				"frozen":         0,
				"sold":           0,
				"price":          out.Price,
				"bucket_count":   out.BucketCount,
				"per_user_limit": out.PerUserLimit,
				"updated_at":     ts,
			}).Error
		} else {
			// A concurrent PutSKU may insert the same id first: the duplicate
			// key error makes writeTx rerun us, and we then take the update
			// path on the row it created.
			err = tx.Create(&out).Error
		}
		if err != nil {
			return err
		}
		// Deltas are relative to the previous row (zero for a new SKU) so
		// summing the journal of a SKU always replays its current row.
		j := journalFor(out, ref, journalReset,
			out.Available-cur.Available, -cur.Frozen, -cur.Sold,
			fmt.Sprintf("reset: total=%d price=%d buckets=%d limit=%d", sku.Total, sku.Price, sku.Buckets, sku.PerUserLimit), ts)
		return tx.Create(&j).Error
	})
	if err != nil {
		return Inventory{}, fmt.Errorf("put sku %s: %w", sku.ID, err)
	}
	return out.toInventory(), nil
}

// Inventory returns the current stock row of a SKU, or ErrUnknownSKU.
func (s *Store) Inventory(ctx context.Context, skuID string) (Inventory, error) {
	var row inventoryRow
	err := s.db.WithContext(ctx).Where("sku_id = ?", skuID).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return Inventory{}, fmt.Errorf("inventory %s: %w", skuID, ErrUnknownSKU)
	}
	if err != nil {
		return Inventory{}, fmt.Errorf("inventory %s: %w", skuID, err)
	}
	return row.toInventory(), nil
}
