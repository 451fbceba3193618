//go:build integration

package inventory

import (
	"context"
	"testing"
	"time"

	"github.com/flashsale/flashsale"

	"github.com/stretchr/testify/require"
)

// Two Stores on one Redis are two processes (an API instance and a
// worker): each caches layouts of its own, and a change made through one
// must never let the other reserve under the layout it cached.

// twoProcesses returns two Stores with separate caches on the same Redis.
func twoProcesses(t *testing.T) (*Store, *Store, string) {
	t.Helper()
	a, rdb := newStore(t)
	b := New(rdb, testOpts)
	// Long enough that only the stamps can refuse a stale entry.
	old := layoutCacheTTL
	layoutCacheTTL = time.Hour
	t.Cleanup(func() { layoutCacheTTL = old })
	return a, b, newSKU(t, rdb)
}

// requireCached checks that s holds a cached layout of sku with n buckets.
func requireCached(t *testing.T, s *Store, sku string, n int) {
	t.Helper()
	c, ok := s.layouts.get(sku)
	require.True(t, ok, "layout of %s not cached", sku)
	require.Equal(t, n, c.lay.n)
}

func TestCachedLayoutRefusedAfterGrow(t *testing.T) {
	ctx := context.Background()
	a, b, sku := twoProcesses(t)
	_, err := a.Preheat(ctx, sku, 8, 2) // 4,4
	require.NoError(t, err)
	_, err = a.Reserve(ctx, "warm", sku, 1)
	require.NoError(t, err)
	requireCached(t, a, sku, 2)

	// b grows the SKU to 16: the spread moves most units into buckets 2..15,
	// which a's cached layout (2 buckets) does not know.
	_, err = b.Resize(ctx, sku, 16)
	require.NoError(t, err)
	require.Less(t, stock(t, a, sku).PerBucket[0]+stock(t, a, sku).PerBucket[1], int64(7))

	// Under the cached layout a would find at most two buckets' worth and
	// answer sold out; refused, it reads the new layout and is served.
	r, err := a.Reserve(ctx, "all-the-rest", sku, 7)
	require.NoError(t, err)
	require.Equal(t, int64(7), r.Quantity)
	requireCached(t, a, sku, 16)
	st := stock(t, a, sku)
	require.Equal(t, int64(0), st.Available)
	require.Equal(t, int64(8), heldUnits(t, a, sku), "every unit taken exactly once")
	_, err = a.Reserve(ctx, "late", sku, 1)
	require.ErrorIs(t, err, &flashsale.Error{Code: flashsale.SoldOut})
}

func TestCachedLayoutRefusedAfterShrink(t *testing.T) {
	ctx := context.Background()
	a, b, sku := twoProcesses(t)
	_, err := a.Preheat(ctx, sku, 64, 16)
	require.NoError(t, err)
	_, err = a.Reserve(ctx, "warm", sku, 1)
	require.NoError(t, err)
	requireCached(t, a, sku, 16)

	_, err = b.Resize(ctx, sku, 4)
	require.NoError(t, err)

	// Orders starting in a removed bucket under the cached count: they
	// must walk the 4 live buckets, not the removed ones.
	for i := range 12 {
		id := orderStartingAt(t, "after-shrink-"+string(rune('a'+i)), 4+i, 16)
		r, err := a.Reserve(ctx, id, sku, 1)
		require.NoError(t, err)
		for _, p := range r.Parts {
			require.Less(t, p.Bucket, 4, "order %s took from removed bucket %d", id, p.Bucket)
		}
	}
	requireCached(t, a, sku, 4)
	require.Equal(t, int64(64-13), stock(t, a, sku).Available)
	require.Equal(t, int64(13), heldUnits(t, a, sku))
}

// The case a stale cache would turn into a second take: the first attempt
// of an order runs in the process that knows the new layout, its retry in
// one that cached the old one. The retry must replay, not take again.
func TestRetryInStaleProcessReplaysFirstAttempt(t *testing.T) {
	ctx := context.Background()
	a, b, sku := twoProcesses(t)
	_, err := a.Preheat(ctx, sku, 100, 16)
	require.NoError(t, err)
	_, err = a.Reserve(ctx, "warm", sku, 1)
	require.NoError(t, err)
	requireCached(t, a, sku, 16)

	_, err = b.Resize(ctx, sku, 4)
	require.NoError(t, err)
	// An order whose start differs between the layouts: under 16 its
	// retry would begin at a bucket holding no marker of it.
	order := orderStartingAt(t, "crossing", 9, 16)
	first, err := b.Reserve(ctx, order, sku, 3)
	require.NoError(t, err)

	retry, err := a.Reserve(ctx, order, sku, 3)
	require.NoError(t, err)
	require.Equal(t, first, retry, "the retry must replay the first attempt's takes")
	require.Equal(t, int64(100-4), stock(t, a, sku).Available, "3 units for the order, 1 for warm: no second take")
	require.Equal(t, int64(4), heldUnits(t, a, sku))
}

// The other direction: the first attempt under the cached (old) layout,
// a resize in another process, then the retry in the first process: it
// must walk the buckets its first attempt walked (walkFor).
func TestRetryAfterResizeWalksFirstAttemptsBuckets(t *testing.T) {
	ctx := context.Background()
	a, b, sku := twoProcesses(t)
	_, err := a.Preheat(ctx, sku, 8, 4) // 2,2,2,2
	require.NoError(t, err)
	order := orderStartingAt(t, "before-resize", 1, 4)
	first, err := a.Reserve(ctx, order, sku, 3) // 2 from bucket 1, 1 from 2
	require.NoError(t, err)
	require.Equal(t, []flashsale.Part{{Bucket: 1, Quantity: 2}, {Bucket: 2, Quantity: 1}}, first.Parts)
	requireCached(t, a, sku, 4)

	_, err = b.Resize(ctx, sku, 16)
	require.NoError(t, err)

	retry, err := a.Reserve(ctx, order, sku, 3)
	require.NoError(t, err)
	require.Equal(t, first, retry)
	require.Equal(t, int64(5), stock(t, a, sku).Available)
	require.Equal(t, int64(3), heldUnits(t, a, sku))

	// And a release from the other process finds every unit.
	n, err := b.Release(ctx, order, sku)
	require.NoError(t, err)
	require.Equal(t, int64(3), n)
	require.Equal(t, int64(8), stock(t, a, sku).Available)
}

func TestCachedLayoutRefusedAfterPreheat(t *testing.T) {
	ctx := context.Background()
	a, b, sku := twoProcesses(t)
	_, err := a.Preheat(ctx, sku, 4, 4)
	require.NoError(t, err)
	_, err = a.Reserve(ctx, "warm", sku, 1)
	require.NoError(t, err)
	requireCached(t, a, sku, 4)

	// A new sale loads the SKU with another count (no resize history).
	_, err = b.Preheat(ctx, sku, 32, 16)
	require.NoError(t, err)
	r, err := a.Reserve(ctx, orderStartingAt(t, "new-sale", 12, 16), sku, 2)
	require.NoError(t, err)
	require.Equal(t, 12, r.Parts[0].Bucket, "walks the count of the new load")
	requireCached(t, a, sku, 16)
	require.Equal(t, int64(30), stock(t, a, sku).Available)
}

// take.lua itself: a cached epoch that is not the bucket's stamp is
// refused before anything is read or written, even a replay.
func TestTakeRefusesStaleEpoch(t *testing.T) {
	ctx := context.Background()
	s, rdb := newStore(t)
	sku := newSKU(t, rdb)
	_, err := s.Preheat(ctx, sku, 5, 1)
	require.NoError(t, err)
	lay, err := s.layout(ctx, sku)
	require.NoError(t, err)
	require.Positive(t, lay.epoch)
	keys := []string{stockKey(sku, 0), orderKey(sku, 0, "o"), stampKey(sku, 0)}

	res, err := takeScript.Run(ctx, rdb, keys, 2, s.heldMs, s.zeroMs, lay.epoch-1).Int64Slice()
	require.NoError(t, err)
	require.Equal(t, []int64{-4, lay.epoch}, res)
	require.Equal(t, int64(0), rdb.Exists(ctx, orderKey(sku, 0, "o")).Val())

	res, err = takeScript.Run(ctx, rdb, keys, 2, s.heldMs, s.zeroMs, lay.epoch).Int64Slice()
	require.NoError(t, err)
	require.Equal(t, int64(2), res[0])
	// A replay under a stale epoch is refused too.
	res, err = takeScript.Run(ctx, rdb, keys, 2, s.heldMs, s.zeroMs, lay.epoch-1).Int64Slice()
	require.NoError(t, err)
	require.Equal(t, int64(-4), res[0])
	require.Equal(t, int64(3), stock(t, s, sku).Available)
}

// The sold-out flag is still set by a buyer served from the cache.
func TestCachedReserveSetsSoldOutFlag(t *testing.T) {
	ctx := context.Background()
	s, rdb := newStore(t)
	sku := newSKU(t, rdb)
	_, err := s.Preheat(ctx, sku, 2, 2)
	require.NoError(t, err)
	_, err = s.Reserve(ctx, "one", sku, 2)
	require.NoError(t, err)
	requireCached(t, s, sku, 2)
	_, err = s.Reserve(ctx, "two", sku, 1)
	require.ErrorIs(t, err, &flashsale.Error{Code: flashsale.SoldOut})
	require.True(t, stock(t, s, sku).SoldOut)
}

// A retry after a resize whose start bucket under the new count is the
// start bucket of the interrupted walk too (crc32 = 3 mod 16, so 3 under 4
// and under 16), while that walk wrapped to bucket 0: the retry must
// replay bucket 0, not take the units again from buckets 4 and 5. This is
// how TestResizeUnderLoad once saw a release return 3 units of an order of
// 2 (the walk there was cut by take.lua refusing a cached layout).
func TestRetryAfterResizeReplaysAWrappedWalk(t *testing.T) {
	ctx := context.Background()
	a, b, sku := twoProcesses(t)
	_, err := a.Preheat(ctx, sku, 64, 4) // 16 each
	require.NoError(t, err)
	_, err = a.Reserve(ctx, orderStartingAt(t, "drain", 3, 4), sku, 16) // bucket 3 empty
	require.NoError(t, err)

	// The first attempt of an order of 20 under 4 buckets: nothing in
	// bucket 3, 16 units from bucket 0, then the process dies before
	// bucket 1. After the resize, buckets 4.. hold 2 each: enough for a
	// walk that starts at 3 and goes on to 4 to take all 20 again.
	order := orderStartingAt(t, "wrapped", 3, 16)
	for _, step := range []struct{ bucket, want, took int64 }{{3, 20, 0}, {0, 20, 16}} {
		keys := []string{stockKey(sku, int(step.bucket)), orderKey(sku, int(step.bucket), order), stampKey(sku, int(step.bucket))}
		res, err := takeScript.Run(ctx, b.rdb, keys, step.want, a.heldMs, a.zeroMs, "").Int64Slice()
		require.NoError(t, err)
		require.Equal(t, step.took, res[0], "bucket %d", step.bucket)
	}

	_, err = b.Resize(ctx, sku, 16)
	require.NoError(t, err)

	r, err := a.Reserve(ctx, order, sku, 20)
	require.NoError(t, err)
	require.Equal(t, int64(20), r.Quantity)
	require.Contains(t, r.Parts, flashsale.Part{Bucket: 0, Quantity: 16}, "the units the first attempt took")
	require.Equal(t, int64(16+20), heldUnits(t, a, sku), "drain's 16 and the order's 20, nothing more")
	require.Equal(t, int64(64-36), stock(t, a, sku).Available)

	n, err := b.Release(ctx, order, sku)
	require.NoError(t, err)
	require.Equal(t, int64(20), n)
	require.Equal(t, int64(64-16), stock(t, a, sku).Available)
}
