package inventory

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// WaitlistLength is how many buyers wait for sku's released units (the
// FIFO list and a fair sale's ranked buyers), for the sale page. An unknown
// SKU has an empty waitlist.
func (s *Store) WaitlistLength(ctx context.Context, sku string) (_ int64, err error) {
	defer codeOutage(&err)
	if err := validateSKU(sku); err != nil {
		return 0, fmt.Errorf("waitlist length %s: %w", sku, err)
	}
	var list, ranked *redis.IntCmd
	if _, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		list = p.LLen(ctx, waitlistKey(sku))
		ranked = p.ZCard(ctx, waitlistRankedKey(sku))
		return nil
	}); err != nil {
		return 0, fmt.Errorf("waitlist length %s: %w", sku, err)
	}
	return list.Val() + ranked.Val(), nil
}
