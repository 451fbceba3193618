//go:build integration

package inventory

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// RemoveSKU removes every key of the SKU, the bucket count first, and
// nothing of another SKU whose id starts like it (x:b1 shares the tag of x's
// bucket 1); asked to stop, it removes nothing more; a repeat removes what
// is left.
func TestRemoveSKU(t *testing.T) {
	s, rdb := newStore(t)
	ctx := context.Background()
	sku := newSKU(t, rdb)
	other := sku + ":b1"
	t.Cleanup(func() { deleteSKUKeys(t, rdb, other) })
	for _, k := range []string{sku, other} {
		_, err := s.Preheat(ctx, k, 8, 4)
		require.NoError(t, err)
		_, err = s.Reserve(ctx, "o1", k, 2)
		require.NoError(t, err)
		_, err = s.JoinWaitlist(ctx, k, "w", 10)
		require.Error(t, err, "not sold out: nothing joins, nothing is written")
		require.NoError(t, rdb.Set(ctx, "fs:{sku:"+k+"}:sale", "x", 0).Err())
	}
	// Both SKUs' keys start with sku's tag; sku's are its own slot's and
	// its buckets' (x's bucket 1 and SKU x:b1 share the tag {sku:x:b1}, and
	// only the suffix says whose a key is).
	split := func() (mine, others []string) {
		iter := rdb.Scan(ctx, 0, "fs:{sku:"+sku+"*", 1000).Iterator()
		for iter.Next(ctx) {
			k := iter.Val()
			if strings.HasPrefix(k, "fs:{sku:"+sku+"}:") || isBucketKey(k, orderKeyPrefix(sku)) {
				mine = append(mine, k)
			} else {
				others = append(others, k)
			}
		}
		require.NoError(t, iter.Err())
		slices.Sort(mine)
		slices.Sort(others)
		return slices.Compact(mine), slices.Compact(others)
	}
	mine, before := split()
	require.Contains(t, mine, "fs:{sku:"+sku+":b1}:stock")
	require.Contains(t, before, "fs:{sku:"+sku+":b1}:buckets")
	require.Greater(t, len(mine), 5)
	keysOf := func() []string { m, _ := split(); return m }

	stopped, err := s.RemoveSKU(ctx, sku, func(context.Context) (bool, error) { return false, nil })
	require.NoError(t, err)
	require.Zero(t, stopped, "told to stop before the first batch")
	require.ElementsMatch(t, mine, keysOf())

	calls := 0
	n, err := s.RemoveSKU(ctx, sku, func(context.Context) (bool, error) { calls++; return calls == 1, nil })
	require.NoError(t, err)
	require.EqualValues(t, 1, n, "the bucket count, then stopped")
	_, err = s.Stock(ctx, sku)
	require.Error(t, err, "no count: the SKU is unknown to buyers from the first removal")

	n, err = s.RemoveSKU(ctx, sku, func(context.Context) (bool, error) { return true, nil })
	require.NoError(t, err)
	require.EqualValues(t, len(mine)-1, n)
	left, after := split()
	require.Empty(t, left)
	require.Equal(t, before, after, "another SKU's keys stay")
	st, err := s.Stock(ctx, other)
	require.NoError(t, err)
	require.EqualValues(t, 6, st.Available)
}

// The other way round (issue 35): ending the sale of a SKU named like
// another's bucket ("x:b1", which ids allowed before flashsale.ValidSKUID)
// removed x's bucket 1 (its stock, layout and held orders' markers), since
// they match fs:{sku:x:b1}:*. Now every key of x stays, counted, and x
// still holds its units.
func TestRemoveSKUNamedLikeABucketLeavesThatBucket(t *testing.T) {
	s, rdb := newStore(t)
	ctx := context.Background()
	sku := newSKU(t, rdb)
	other := sku + ":b1"
	t.Cleanup(func() { deleteSKUKeys(t, rdb, other) })
	for _, k := range []string{sku, other} {
		_, err := s.Preheat(ctx, k, 8, 4)
		require.NoError(t, err)
		for _, o := range []string{"o1", "o2", "o3", "o4"} {
			_, err = s.Reserve(ctx, o, k, 1)
			require.NoError(t, err)
		}
		require.NoError(t, rdb.Set(ctx, "fs:{sku:"+k+"}:sale", "x", 0).Err())
	}
	keysOf := func(owner string) []string {
		var out []string
		iter := rdb.Scan(ctx, 0, "fs:{sku:"+sku+"*", 1000).Iterator()
		for iter.Next(ctx) {
			k := iter.Val()
			if strings.HasPrefix(k, "fs:{sku:"+owner+"}:") && !isBucketKeyName(strings.TrimPrefix(k, "fs:{sku:"+owner+"}:")) ||
				isBucketKey(k, orderKeyPrefix(owner)) {
				out = append(out, k)
			}
		}
		require.NoError(t, iter.Err())
		slices.Sort(out)
		return slices.Compact(out)
	}
	before := keysOf(sku)
	require.Contains(t, before, "fs:{sku:"+sku+":b1}:stock", "x's bucket 1 shares the tag of SKU x:b1")
	theirs := keysOf(other)
	require.Greater(t, len(theirs), 5)

	n, err := s.RemoveSKU(ctx, other, func(context.Context) (bool, error) { return true, nil })
	require.NoError(t, err)
	require.EqualValues(t, len(theirs), n, "exactly the keys of x:b1")
	require.Empty(t, keysOf(other))
	require.Equal(t, before, keysOf(sku), "every key of x stays")
	st, err := s.Stock(ctx, sku)
	require.NoError(t, err)
	require.EqualValues(t, 4, st.Available)
}
