package inventory

import (
	"context"
	"fmt"
)

// RawTake runs take.lua once on one bucket with a bare EVALSHA: no bucket
// routing, no MGET of the bucket count, no fallback. It exists for the
// benchmark, which reports Reserve against it as the ceiling of what Redis
// can do with the same script; the buying path must use Reserve.
func (s *Store) RawTake(ctx context.Context, sku string, bucket int, orderID string) (err error) {
	defer codeOutage(&err)
	err = takeScript.EvalSha(ctx, s.rdb, []string{stockKey(sku, bucket), orderKey(sku, bucket, orderID)},
		1, s.heldMs, s.zeroMs).Err()
	if err != nil {
		return fmt.Errorf("raw take %s/%d: %w", sku, bucket, err)
	}
	return nil
}
