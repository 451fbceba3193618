package orderdb

import (
	"context"
	"fmt"

	"github.com/flashsale/flashsale"

	"gorm.io/gorm"
)

// SetBuckets records a SKU's Redis bucket count after a mid-sale resize, so
// a later preheat or restore of the SKU lays Redis out the same way. It
// touches no stock column, so it needs no journal entry and is safe while
// orders hold units. It returns the row as it is afterwards, or
// UnknownSKU.
func (s *Store) SetBuckets(ctx context.Context, skuID string, buckets int) (Inventory, error) {
	if err := flashsale.CheckID("sku_id", skuID, flashsale.MaxIDLength); err != nil {
		return Inventory{}, fmt.Errorf("set buckets %s: %w", skuID, err)
	}
	if err := flashsale.CheckBuckets(buckets); err != nil {
		return Inventory{}, fmt.Errorf("set buckets %s: %w", skuID, err)
	}
	var out inventoryRow
	err := s.writeTx(ctx, nil, func(tx *gorm.DB) error {
		// Locked read, not RowsAffected: MySQL reports 0 affected rows for
		// an update that changes nothing, which is not "unknown sku".
		var err error
		if out, err = lockInventory(tx, skuID); err != nil {
			return err
		}
		if out.BucketCount == buckets {
			return nil
		}
		ts := now()
		err = tx.Model(&inventoryRow{}).Where("sku_id = ?", skuID).UpdateColumns(map[string]any{
			"bucket_count": buckets,
			"updated_at":   ts,
		}).Error
		if err != nil {
			return err
		}
		out.BucketCount, out.UpdatedAt = buckets, ts
		return nil
	})
	if err != nil {
		return Inventory{}, fmt.Errorf("set buckets %s: %w", skuID, err)
	}
	return out.toInventory(), nil
}
