//go:build integration

package inventory

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flashsale/flashsale"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// heldUnits sums what the order markers of sku still hold.
func heldUnits(t testing.TB, s *Store, sku string) int64 {
	t.Helper()
	held, err := s.HeldByOrder(context.Background(), sku)
	require.NoError(t, err)
	var sum int64
	for _, k := range held {
		sum += k
	}
	return sum
}

// rawBuckets reads buckets 0..n-1 directly, live or removed.
func rawBuckets(t testing.TB, rdb *redis.Client, sku string, n int) []int64 {
	t.Helper()
	out := make([]int64, n)
	for b := range out {
		v, err := rdb.Get(context.Background(), stockKey(sku, b)).Int64()
		if errors.Is(err, redis.Nil) {
			continue
		}
		require.NoError(t, err)
		out[b] = v
	}
	return out
}

// requireNothingInTransit checks no move is pending in buckets 0..n-1.
func requireNothingInTransit(t testing.TB, rdb *redis.Client, sku string, n int) {
	t.Helper()
	for b := range n {
		m, err := rdb.HGetAll(context.Background(), pendingMovesKey(sku, b)).Result()
		require.NoError(t, err)
		require.Empty(t, m, "bucket %d has moves in transit", b)
	}
}

func TestResizeExpandSpreadsAndKeepsEveryUnit(t *testing.T) {
	ctx := context.Background()
	s, rdb := newStore(t)
	sku := newSKU(t, rdb)
	_, err := s.Preheat(ctx, sku, 100, 4)
	require.NoError(t, err)
	for i := range 5 {
		_, err := s.Reserve(ctx, fmt.Sprintf("o%d", i), sku, 3)
		require.NoError(t, err)
	}

	res, err := s.Resize(ctx, sku, 16)
	require.NoError(t, err)
	require.Equal(t, 4, res.Previous)
	require.Equal(t, 16, res.Buckets)
	require.Equal(t, int64(85), res.RedisAvailable)
	st := stock(t, s, sku)
	require.Equal(t, 16, st.Buckets)
	require.Equal(t, int64(85), st.Available)
	require.Equal(t, int64(100), st.Available+heldUnits(t, s, sku))
	for b, v := range st.PerBucket {
		// 85 over 16 buckets: 5 or 6 each.
		require.Contains(t, []int64{5, 6}, v, "bucket %d", b)
	}

	// Orders reserved before the expansion release exactly what they took.
	for i := range 5 {
		n, err := s.Release(ctx, fmt.Sprintf("o%d", i), sku)
		require.NoError(t, err)
		require.Equal(t, int64(3), n)
	}
	require.Equal(t, int64(100), stock(t, s, sku).Available)
	requireNothingInTransit(t, rdb, sku, 16)
}

// A shrink empties the removed buckets; an order holding units in one of
// them still releases them, and they land in a live bucket.
func TestResizeShrinkSweepsRemovedBucketsAndLateReleases(t *testing.T) {
	ctx := context.Background()
	s, rdb := newStore(t)
	sku := newSKU(t, rdb)
	_, err := s.Preheat(ctx, sku, 64, 64)
	require.NoError(t, err)
	order := orderStartingAt(t, "late", 40, 64)
	r, err := s.Reserve(ctx, order, sku, 1)
	require.NoError(t, err)
	require.Equal(t, []flashsale.Part{{Bucket: 40, Quantity: 1}}, r.Parts)

	res, err := s.Resize(ctx, sku, 4)
	require.NoError(t, err)
	require.Equal(t, 64, res.Previous)
	require.Equal(t, int64(63), res.RedisAvailable)
	raw := rawBuckets(t, rdb, sku, 64)
	for b := 4; b < 64; b++ {
		require.Zero(t, raw[b], "removed bucket %d", b)
	}
	require.Equal(t, int64(64), stock(t, s, sku).Available+heldUnits(t, s, sku))

	// A retry of the reservation replays it from bucket 40 (beyond the
	// count): no second take.
	again, err := s.Reserve(ctx, order, sku, 1)
	require.NoError(t, err)
	require.Equal(t, r, again)
	require.Equal(t, int64(63), stock(t, s, sku).Available)

	n, err := s.Release(ctx, order, sku)
	require.NoError(t, err)
	require.Equal(t, int64(1), n)
	st := stock(t, s, sku)
	require.Equal(t, 4, st.Buckets)
	require.Equal(t, int64(64), st.Available, "the released unit is back in a live bucket")
	require.Zero(t, rawBuckets(t, rdb, sku, 64)[40])
	requireNothingInTransit(t, rdb, sku, 64)

	// Released means released, wherever the marker is.
	_, err = s.Reserve(ctx, order, sku, 1)
	require.ErrorIs(t, err, &flashsale.Error{Code: flashsale.AlreadyReleased})
	n, err = s.Release(ctx, order, sku)
	require.NoError(t, err)
	require.Zero(t, n)
	require.Equal(t, int64(64), stock(t, s, sku).Available)
}

// A retry of a reservation made before an expansion walks the old layout
// and replays the first answer instead of taking again.
func TestResizeReserveRetryAfterExpansion(t *testing.T) {
	ctx := context.Background()
	s, rdb := newStore(t)
	sku := newSKU(t, rdb)
	_, err := s.Preheat(ctx, sku, 10, 2)
	require.NoError(t, err)
	// Starts at bucket 1 of 2 but elsewhere among 16, and takes 6 units: 5
	// from bucket 1, 1 from bucket 0.
	var order string
	for i := range 1000 {
		id := fmt.Sprintf("r-%d", i)
		if startBucket(id, 2) == 1 && startBucket(id, 16) > 1 {
			order = id
			break
		}
	}
	require.NotEmpty(t, order)
	first, err := s.Reserve(ctx, order, sku, 6)
	require.NoError(t, err)
	require.Equal(t, []flashsale.Part{{Bucket: 1, Quantity: 5}, {Bucket: 0, Quantity: 1}}, first.Parts)

	_, err = s.Resize(ctx, sku, 16)
	require.NoError(t, err)
	again, err := s.Reserve(ctx, order, sku, 6)
	require.NoError(t, err)
	require.Equal(t, first, again)
	require.Equal(t, int64(4), stock(t, s, sku).Available)
	n, err := s.Release(ctx, order, sku)
	require.NoError(t, err)
	require.Equal(t, int64(6), n)
	require.Equal(t, int64(10), stock(t, s, sku).Available)
}

// A move that died between its two halves is finished by the next Resize,
// exactly once, however often Resize runs.
func TestResizeFinishesHalfDoneMoveOnce(t *testing.T) {
	ctx := context.Background()
	s, rdb := newStore(t)
	sku := newSKU(t, rdb)
	_, err := s.Preheat(ctx, sku, 40, 4)
	require.NoError(t, err)
	// Moves only ever run on a SKU that was resized (and so has a layouts
	// list); a resize to the same count makes this one such a SKU.
	_, err = s.Resize(ctx, sku, 4)
	require.NoError(t, err)

	// The take half of a move from bucket 3 to bucket 0, then a "crash".
	out := func() int64 {
		k, err := moveOutScript.Run(ctx, rdb,
			[]string{stockKey(sku, 3), moveOutKey(sku, 3, "m1"), pendingMovesKey(sku, 3)},
			7, 0, s.heldMs, "m1").Int64()
		require.NoError(t, err)
		return k
	}
	require.Equal(t, int64(7), out())
	require.Equal(t, int64(7), out(), "a repeat of the take replays, it does not take again")
	require.Equal(t, int64(33), stock(t, s, sku).Available)
	// The reconciler's snapshot still counts the units in transit, so it
	// never adds them a second time.
	snap, err := s.Snapshot(ctx, sku)
	require.NoError(t, err)
	require.Equal(t, int64(40), snap.Units)
	require.Equal(t, int64(7), snap.InTransit)
	// Landed but not yet acknowledged: counted once, in the bucket.
	added, err := moveInScript.Run(ctx, rdb, []string{stockKey(sku, 0), moveInKey(sku, 0, "m1")}, 7, s.heldMs).Int64()
	require.NoError(t, err)
	require.Equal(t, int64(1), added)
	snap, err = s.Snapshot(ctx, sku)
	require.NoError(t, err)
	require.Equal(t, int64(40), snap.Units)
	require.Zero(t, snap.InTransit)

	res, err := s.Resize(ctx, sku, 2)
	require.NoError(t, err)
	require.Equal(t, int64(40), res.RedisAvailable)
	requireNothingInTransit(t, rdb, sku, 4)

	// The put half replayed by hand adds nothing: it landed already.
	added, err = moveInScript.Run(ctx, rdb, []string{stockKey(sku, 0), moveInKey(sku, 0, "m1")}, 7, s.heldMs).Int64()
	require.NoError(t, err)
	require.Zero(t, added)
	for _, n := range []int{2, 8, 2} {
		res, err = s.Resize(ctx, sku, n)
		require.NoError(t, err)
		require.Equal(t, int64(40), res.RedisAvailable)
	}
	raw := rawBuckets(t, rdb, sku, 8)
	require.Equal(t, []int64{20, 20, 0, 0, 0, 0, 0, 0}, raw)
}

func TestResizeRefusals(t *testing.T) {
	ctx := context.Background()
	s, rdb := newStore(t)
	sku := newSKU(t, rdb)
	_, err := s.Resize(ctx, sku, 4)
	require.ErrorIs(t, err, &flashsale.Error{Code: flashsale.UnknownSKU})
	for _, n := range []int{0, -1, flashsale.MaxBuckets + 1} {
		_, err = s.Resize(ctx, sku, n)
		require.ErrorIs(t, err, &flashsale.Error{Code: flashsale.Invalid}, "%d buckets", n)
	}
	_, err = s.Resize(ctx, "a{b}", 4)
	require.ErrorIs(t, err, &flashsale.Error{Code: flashsale.Invalid})
}

// Buyers reserve and release while the SKU goes 16 -> 64 -> 4 -> 16. No
// unit appears or disappears: at every resize's end and at the end of the
// test, buckets plus held units equal the initial stock.
func TestResizeUnderLoad(t *testing.T) {
	const (
		initial = 300
		workers = 8
	)
	ctx := context.Background()
	s, rdb := newStore(t)
	sku := newSKU(t, rdb)
	_, err := s.Preheat(ctx, sku, initial, 16)
	require.NoError(t, err)

	var (
		heldNow  atomic.Int64 // units reserved and not yet released
		peak     atomic.Int64
		reserved atomic.Int64
		released atomic.Int64
		soldOut  atomic.Int64
		stop     = make(chan struct{})
		wg       sync.WaitGroup
		errs     = make(chan error, workers+1)
		mu       sync.Mutex
		live     = map[string]int64{} // orders still holding units
	)
	for w := range workers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			var mine []string
			// An order counts as holding from after its Reserve returned
			// until before its Release starts, so heldNow never exceeds
			// what the markers really hold at that moment.
			releaseOne := func(id string) error {
				mu.Lock()
				want := live[id]
				delete(live, id)
				mu.Unlock()
				heldNow.Add(-want)
				n, err := s.Release(ctx, id, sku)
				if err != nil {
					return err
				}
				if n != want {
					return fmt.Errorf("release of %s returned %d units, it held %d", id, n, want)
				}
				released.Add(n)
				return nil
			}
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				id := fmt.Sprintf("w%d-%d", w, i)
				qty := int64(1 + rng.IntN(3))
				r, err := s.Reserve(ctx, id, sku, qty)
				switch {
				case errors.Is(err, &flashsale.Error{Code: flashsale.SoldOut}):
					soldOut.Add(1)
				case err != nil:
					errs <- err
					return
				default:
					if r.Quantity != qty {
						errs <- fmt.Errorf("order %s got %d units, asked %d", id, r.Quantity, qty)
						return
					}
					mu.Lock()
					live[id] = qty
					mu.Unlock()
					h := heldNow.Add(qty)
					for p := peak.Load(); h > p && !peak.CompareAndSwap(p, h); p = peak.Load() {
					}
					reserved.Add(qty)
					mine = append(mine, id)
				}
				// Release a random held order now and then, keeping up
				// to 20 per worker so the SKU runs near sold out.
				if len(mine) > 0 && (len(mine) > 20 || rng.IntN(2) == 0) {
					k := rng.IntN(len(mine))
					id := mine[k]
					mine = append(mine[:k], mine[k+1:]...)
					if err := releaseOne(id); err != nil {
						errs <- err
						return
					}
				}
			}
		})
	}

	wg.Go(func() {
		defer close(stop)
		for _, n := range []int{64, 4, 16} {
			time.Sleep(150 * time.Millisecond)
			res, err := s.Resize(ctx, sku, n)
			if err != nil {
				errs <- fmt.Errorf("resize to %d: %w", n, err)
				return
			}
			if res.Buckets != n {
				errs <- fmt.Errorf("resize to %d answered %d buckets", n, res.Buckets)
				return
			}
		}
		time.Sleep(150 * time.Millisecond)
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}

	st := stock(t, s, sku)
	require.Equal(t, 16, st.Buckets)
	held := heldUnits(t, s, sku)
	require.Equal(t, heldNow.Load(), held, "the markers hold what the test says is held")
	require.Equal(t, int64(initial), st.Available+held, "buckets + held after the resizes")
	require.LessOrEqual(t, peak.Load(), int64(initial), "never more reserved at once than the stock")
	raw := rawBuckets(t, rdb, sku, 64)
	for b := 16; b < 64; b++ {
		require.Zero(t, raw[b], "removed bucket %d", b)
	}
	requireNothingInTransit(t, rdb, sku, 64)
	t.Logf("reserved %d, released %d, sold-out answers %d, peak held %d", reserved.Load(), released.Load(), soldOut.Load(), peak.Load())
	require.Positive(t, reserved.Load())
	require.Positive(t, released.Load())

	// Every live order releases exactly what it holds; all units are back.
	for id, want := range live {
		n, err := s.Release(ctx, id, sku)
		require.NoError(t, err)
		require.Equal(t, want, n, "order %s", id)
	}
	require.Equal(t, int64(initial), stock(t, s, sku).Available)
}

// A restock request repeated after a resize must find the bucket its first
// attempt marked: under the new count crc32(id)%N names another bucket,
// and an earlier version added the units there a second time.
func TestResizeRestockRepeatAddsOnce(t *testing.T) {
	s, rdb := newStore(t)
	ctx := context.Background()
	sku := newSKU(t, rdb)
	_, err := s.Preheat(ctx, sku, 0, 4)
	require.NoError(t, err)
	// Bucket 1 of 4, 17 of 32 and so 1 of 2: a different bucket under
	// the grown count, and a removed one after the shrink.
	id := orderStartingAt(t, "req", 17, 32)

	added, err := s.Restock(ctx, sku, id, 5)
	require.NoError(t, err)
	require.True(t, added)
	_, err = s.Resize(ctx, sku, 32)
	require.NoError(t, err)
	added, err = s.Restock(ctx, sku, id, 5)
	require.NoError(t, err)
	require.False(t, added, "repeat after growing 4 -> 32")
	require.Equal(t, int64(5), stock(t, s, sku).Available)

	// Marked under 32 this time, then the bucket is removed.
	id2 := orderStartingAt(t, "req2", 17, 32)
	added, err = s.Restock(ctx, sku, id2, 3)
	require.NoError(t, err)
	require.True(t, added)
	_, err = s.Resize(ctx, sku, 2)
	require.NoError(t, err)
	for _, r := range []string{id, id2} {
		added, err = s.Restock(ctx, sku, r, map[string]int64{id: 5, id2: 3}[r])
		require.NoError(t, err)
		require.False(t, added, "repeat of %s after shrinking 32 -> 2", r)
	}
	st := stock(t, s, sku)
	require.Equal(t, 2, st.Buckets)
	require.Equal(t, int64(8), st.Available, "every unit in a live bucket, none twice")
	raw := rawBuckets(t, rdb, sku, 32)
	for b := 2; b < 32; b++ {
		require.Zero(t, raw[b], "removed bucket %d", b)
	}
}
