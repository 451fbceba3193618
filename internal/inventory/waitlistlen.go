package inventory

import (
	"context"
	"fmt"
)

// WaitlistLength is how many buyers wait for sku's released units: one
// LLEN, for the sale page. An unknown SKU has an empty list.
func (s *Store) WaitlistLength(ctx context.Context, sku string) (_ int64, err error) {
	defer codeOutage(&err)
	if err := validateSKU(sku); err != nil {
		return 0, fmt.Errorf("waitlist length %s: %w", sku, err)
	}
	n, err := s.rdb.LLen(ctx, waitlistKey(sku)).Result()
	if err != nil {
		return 0, fmt.Errorf("waitlist length %s: %w", sku, err)
	}
	return n, nil
}
