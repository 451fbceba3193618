package orderdb

import (
	"context"
	"fmt"
)

// ResyncPending returns, for each of skus that MySQL knows, its
// Inventory.RedisResync value: non-zero while orders reserved or closed
// without Redis have left Redis's buckets out of step. SKUs without an
// inventory row are absent from the map.
func (s *Store) ResyncPending(ctx context.Context, skus []string) (map[string]int64, error) {
	out := make(map[string]int64, len(skus))
	if len(skus) == 0 {
		return out, nil
	}
	var rows []inventoryRow
	err := s.db.WithContext(ctx).Select("sku_id", "redis_resync").
		Where("sku_id IN ?", skus).Find(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("read redis resync flags: %w", err)
	}
	for _, r := range rows {
		out[r.SKUID] = r.RedisResync
	}
	return out, nil
}

// FinishResync clears sku's resync flag if it still has the value seen,
// the one read before Redis was compared with MySQL. It reports false when
// a degraded order moved units since: that move may be missing from the
// comparison, so the caller must compare again. Clearing an already clear
// flag (seen == 0) reports true.
func (s *Store) FinishResync(ctx context.Context, sku string, seen int64) (bool, error) {
	if seen == 0 {
		return true, nil
	}
	res := s.db.WithContext(ctx).Model(&inventoryRow{}).
		Where("sku_id = ? AND redis_resync = ?", sku, seen).
		UpdateColumn("redis_resync", 0)
	if res.Error != nil {
		return false, fmt.Errorf("finish redis resync of %s: %w", sku, res.Error)
	}
	return res.RowsAffected == 1, nil
}
