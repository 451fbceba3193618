//go:build integration

package inventory

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/flashsale/flashsale"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

func TestKeySlots(t *testing.T) {
	// Known vector from the Redis Cluster spec: proves keySlot is the real
	// slot function, so the assertions below mean something.
	require.Equal(t, 12739, keySlot("123456789"))

	sku := "sku-42"
	skuSlot := keySlot(bucketsKey(sku))
	for _, k := range []string{genKey(sku), soldOutKey(sku), driftKey(sku), limitKey(sku), heldKey(sku, "u:{x}"), claimKey(sku, "o-{1}")} {
		require.Equal(t, skuSlot, keySlot(k), "SKU-level key %s", k)
	}
	for b := range 16 {
		slot := keySlot(stockKey(sku, b))
		require.Equal(t, slot, keySlot(orderKey(sku, b, "order-{weird}-1")), "order marker of bucket %d", b)
		require.Equal(t, slot, keySlot(restockKey(sku, b, "req-1")), "restock marker of bucket %d", b)
	}
	require.Equal(t, "fs:{sku:sku-42}:buckets", bucketsKey(sku))
	require.Equal(t, "fs:{sku:sku-42:b3}:stock", stockKey(sku, 3))
	require.Equal(t, "fs:{sku:sku-42:b3}:order:o1", orderKey(sku, 3, "o1"))
}

func TestValidation(t *testing.T) {
	s, rdb := newStore(t)
	ctx := context.Background()
	sku := newSKU(t, rdb)
	_, err := s.Preheat(ctx, sku, 10, 2)
	require.NoError(t, err)

	tests := []struct {
		name string
		call func() error
		want error
	}{
		{"reserve zero qty", func() error { _, err := s.Reserve(ctx, "o", sku, 0); return err }, &flashsale.Error{Code: flashsale.Invalid}},
		{"reserve negative qty", func() error { _, err := s.Reserve(ctx, "o", sku, -1); return err }, &flashsale.Error{Code: flashsale.Invalid}},
		{"reserve empty order", func() error { _, err := s.Reserve(ctx, "", sku, 1); return err }, &flashsale.Error{Code: flashsale.Invalid}},
		{"reserve empty sku", func() error { _, err := s.Reserve(ctx, "o", "", 1); return err }, &flashsale.Error{Code: flashsale.Invalid}},
		{"reserve brace sku", func() error { _, err := s.Reserve(ctx, "o", "a}b", 1); return err }, &flashsale.Error{Code: flashsale.Invalid}},
		{"reserve unknown sku", func() error { _, err := s.Reserve(ctx, "o", sku+"-none", 1); return err }, &flashsale.Error{Code: flashsale.UnknownSKU}},
		{"release empty order", func() error { _, err := s.Release(ctx, "", sku); return err }, &flashsale.Error{Code: flashsale.Invalid}},
		{"release unknown sku", func() error { _, err := s.Release(ctx, "o", sku+"-none"); return err }, &flashsale.Error{Code: flashsale.UnknownSKU}},
		{"preheat zero buckets", func() error { _, err := s.Preheat(ctx, sku, 1, 0); return err }, &flashsale.Error{Code: flashsale.Invalid}},
		{"preheat too many buckets", func() error { _, err := s.Preheat(ctx, sku, 1, flashsale.MaxBuckets+1); return err }, &flashsale.Error{Code: flashsale.Invalid}},
		{"preheat negative available", func() error { _, err := s.Preheat(ctx, sku, -1, 4); return err }, &flashsale.Error{Code: flashsale.Invalid}},
		{"restock zero qty", func() error { _, err := s.Restock(ctx, sku, "r", 0); return err }, &flashsale.Error{Code: flashsale.Invalid}},
		{"restock empty request", func() error { _, err := s.Restock(ctx, sku, "", 1); return err }, &flashsale.Error{Code: flashsale.Invalid}},
		{"restock unknown sku", func() error { _, err := s.Restock(ctx, sku+"-none", "r", 1); return err }, &flashsale.Error{Code: flashsale.UnknownSKU}},
		{"stock unknown sku", func() error { _, err := s.Stock(ctx, sku+"-none"); return err }, &flashsale.Error{Code: flashsale.UnknownSKU}},
		{"drift zero", func() error { return s.RecordDrift(ctx, sku, "o", 0) }, &flashsale.Error{Code: flashsale.Invalid}},
		{"drift without order", func() error { return s.RecordDrift(ctx, sku, "", 1) }, &flashsale.Error{Code: flashsale.Invalid}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			require.ErrorIs(t, tc.call(), tc.want)
		})
	}
	// Nothing above may have moved stock.
	require.Equal(t, int64(10), stock(t, s, sku).Available)
}

func TestReserveConcurrentExactlyStock(t *testing.T) {
	s, rdb := newStore(t)
	ctx := context.Background()
	sku := newSKU(t, rdb)
	_, err := s.Preheat(ctx, sku, 100, 16)
	require.NoError(t, err)

	const buyers = 1000
	var (
		wg              sync.WaitGroup
		mu              sync.Mutex
		won, soldOut    int
		other           []error
		unitsFromBucket = make(map[int]int64)
	)
	for i := range buyers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := s.Reserve(ctx, fmt.Sprintf("order-%d", i), sku, 1)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				won++
				for _, p := range r.Parts {
					unitsFromBucket[p.Bucket] += p.Quantity
				}
			case errors.Is(err, &flashsale.Error{Code: flashsale.SoldOut}):
				soldOut++
			default:
				other = append(other, err)
			}
		}()
	}
	wg.Wait()

	require.Empty(t, other)
	require.Equal(t, 100, won)
	require.Equal(t, buyers-100, soldOut)
	st := stock(t, s, sku)
	require.Equal(t, int64(0), st.Available)
	require.Equal(t, make([]int64, 16), st.PerBucket, "no bucket may go negative or keep units")
	require.True(t, st.SoldOut, "sold-out flag")
	// Every bucket gave exactly what preheat put in (100 over 16: 7,7,7,7,6...).
	for b := range 16 {
		want := int64(6)
		if b < 4 {
			want = 7
		}
		require.Equal(t, want, unitsFromBucket[b], "bucket %d", b)
	}
}

func TestReserveFallsBackToOtherBuckets(t *testing.T) {
	s, rdb := newStore(t)
	ctx := context.Background()

	// 1 unit over 16 buckets: only bucket 0 holds stock. A buyer must get it
	// whichever bucket its order id hashes to.
	for start := range 16 {
		t.Run(fmt.Sprintf("start=%d", start), func(t *testing.T) {
			sku := newSKU(t, rdb)
			_, err := s.Preheat(ctx, sku, 1, 16)
			require.NoError(t, err)
			order := orderStartingAt(t, "fallback", start, 16)

			r, err := s.Reserve(ctx, order, sku, 1)
			require.NoError(t, err)
			require.Equal(t, []flashsale.Part{{Bucket: 0, Quantity: 1}}, r.Parts)

			_, err = s.Reserve(ctx, order+"-next", sku, 1)
			require.ErrorIs(t, err, &flashsale.Error{Code: flashsale.SoldOut})
		})
	}

	t.Run("quantity spanning buckets", func(t *testing.T) {
		sku := newSKU(t, rdb)
		_, err := s.Preheat(ctx, sku, 10, 4) // 3,3,2,2
		require.NoError(t, err)
		order := orderStartingAt(t, "span", 2, 4)

		r, err := s.Reserve(ctx, order, sku, 9)
		require.NoError(t, err)
		require.Equal(t, flashsale.Reservation{SKU: sku, Quantity: 9, Parts: []flashsale.Part{
			{Bucket: 2, Quantity: 2}, {Bucket: 3, Quantity: 2}, {Bucket: 0, Quantity: 3}, {Bucket: 1, Quantity: 2},
		}}, r)
		require.Equal(t, []int64{0, 1, 0, 0}, stock(t, s, sku).PerBucket)
	})
}

func TestReserveIdempotent(t *testing.T) {
	s, rdb := newStore(t)
	ctx := context.Background()

	t.Run("sequential", func(t *testing.T) {
		sku := newSKU(t, rdb)
		_, err := s.Preheat(ctx, sku, 20, 16) // 2,2,2,2,1,...
		require.NoError(t, err)

		first, err := s.Reserve(ctx, "order-seq", sku, 5)
		require.NoError(t, err)
		require.Greater(t, len(first.Parts), 1, "qty 5 must span buckets")
		for range 3 {
			again, err := s.Reserve(ctx, "order-seq", sku, 5)
			require.NoError(t, err)
			require.Equal(t, first, again)
		}
		require.Equal(t, int64(15), stock(t, s, sku).Available)
	})

	t.Run("concurrent", func(t *testing.T) {
		sku := newSKU(t, rdb)
		_, err := s.Preheat(ctx, sku, 20, 16)
		require.NoError(t, err)

		const attempts = 50
		results := make([]flashsale.Reservation, attempts)
		errs := make([]error, attempts)
		var wg sync.WaitGroup
		for i := range attempts {
			wg.Add(1)
			go func() {
				defer wg.Done()
				results[i], errs[i] = s.Reserve(ctx, "order-conc", sku, 5)
			}()
		}
		wg.Wait()
		for i := range attempts {
			require.NoError(t, errs[i])
			require.Equal(t, results[0], results[i])
		}
		require.Equal(t, int64(5), results[0].Quantity)
		require.Equal(t, int64(15), stock(t, s, sku).Available)
	})

	t.Run("retry with different quantity is refused", func(t *testing.T) {
		sku := newSKU(t, rdb)
		_, err := s.Preheat(ctx, sku, 20, 1)
		require.NoError(t, err)
		_, err = s.Reserve(ctx, "order-qty", sku, 5)
		require.NoError(t, err)
		_, err = s.Reserve(ctx, "order-qty", sku, 3)
		require.ErrorIs(t, err, &flashsale.Error{Code: flashsale.Invalid})
		require.Equal(t, int64(15), stock(t, s, sku).Available)
	})
}

func TestReserveSoldOutIsAllOrNothing(t *testing.T) {
	s, rdb := newStore(t)
	ctx := context.Background()
	sku := newSKU(t, rdb)
	_, err := s.Preheat(ctx, sku, 5, 4) // 2,1,1,1
	require.NoError(t, err)

	_, err = s.Reserve(ctx, "too-big", sku, 6)
	require.ErrorIs(t, err, &flashsale.Error{Code: flashsale.SoldOut})
	st := stock(t, s, sku)
	require.Equal(t, []int64{2, 1, 1, 1}, st.PerBucket, "partial takes must be given back to their buckets")
	require.False(t, st.SoldOut, "5 units remain: the flag would turn away buyers who can be served")

	// The retry repeats the answer and still moves nothing.
	_, err = s.Reserve(ctx, "too-big", sku, 6)
	require.ErrorIs(t, err, &flashsale.Error{Code: flashsale.SoldOut})
	require.Equal(t, []int64{2, 1, 1, 1}, stock(t, s, sku).PerBucket)

	// The units are really available to others.
	_, err = s.Reserve(ctx, "fits", sku, 5)
	require.NoError(t, err)
	_, err = s.Reserve(ctx, "late", sku, 1)
	require.ErrorIs(t, err, &flashsale.Error{Code: flashsale.SoldOut})
	require.True(t, stock(t, s, sku).SoldOut)
}

func TestRelease(t *testing.T) {
	s, rdb := newStore(t)
	ctx := context.Background()
	sku := newSKU(t, rdb)
	_, err := s.Preheat(ctx, sku, 4, 2) // 2,2
	require.NoError(t, err)

	r, err := s.Reserve(ctx, "buyer", sku, 3)
	require.NoError(t, err)
	_, err = s.Reserve(ctx, "loser", sku, 2)
	require.ErrorIs(t, err, &flashsale.Error{Code: flashsale.SoldOut})
	_, err = s.Reserve(ctx, "drainer", sku, 1)
	require.NoError(t, err)
	_, err = s.Reserve(ctx, "loser2", sku, 1)
	require.ErrorIs(t, err, &flashsale.Error{Code: flashsale.SoldOut})
	st := stock(t, s, sku)
	require.True(t, st.SoldOut)
	require.Equal(t, []int64{0, 0}, st.PerBucket)

	n, err := s.Release(ctx, "buyer", sku)
	require.NoError(t, err)
	require.Equal(t, int64(3), n)
	st = stock(t, s, sku)
	require.False(t, st.SoldOut, "release must clear the flag")
	want := []int64{0, 0}
	for _, p := range r.Parts {
		want[p.Bucket] += p.Quantity
	}
	require.Equal(t, want, st.PerBucket, "units go back to the bucket they came from")

	n, err = s.Release(ctx, "buyer", sku)
	require.NoError(t, err)
	require.Equal(t, int64(0), n, "second release is a no-op")
	require.Equal(t, int64(3), stock(t, s, sku).Available)

	_, err = s.Reserve(ctx, "buyer", sku, 3)
	require.ErrorIs(t, err, &flashsale.Error{Code: flashsale.AlreadyReleased})
	require.Equal(t, int64(3), stock(t, s, sku).Available)

	// Release before any Reserve (compensation racing a late activity
	// attempt): nothing to return, and the late Reserve must not take.
	n, err = s.Release(ctx, "cancelled-early", sku)
	require.NoError(t, err)
	require.Equal(t, int64(0), n)
	_, err = s.Reserve(ctx, "cancelled-early", sku, 1)
	require.ErrorIs(t, err, &flashsale.Error{Code: flashsale.AlreadyReleased})
	require.Equal(t, int64(3), stock(t, s, sku).Available)
}

func TestReleaseRacingReserveNeverLeaks(t *testing.T) {
	s, rdb := newStore(t)
	ctx := context.Background()
	sku := newSKU(t, rdb)
	_, err := s.Preheat(ctx, sku, 1000, 16)
	require.NoError(t, err)

	// Each order's Reserve and Release run at the same time. Whatever the
	// interleaving, once both returned the order must hold nothing.
	var wg sync.WaitGroup
	for i := range 200 {
		order := fmt.Sprintf("race-%d", i)
		wg.Add(2)
		go func() {
			defer wg.Done()
			_, err := s.Reserve(ctx, order, sku, 7)
			if err != nil && !errors.Is(err, &flashsale.Error{Code: flashsale.AlreadyReleased}) {
				t.Errorf("reserve %s: %v", order, err)
			}
		}()
		go func() {
			defer wg.Done()
			if _, err := s.Release(ctx, order, sku); err != nil {
				t.Errorf("release %s: %v", order, err)
			}
		}()
	}
	wg.Wait()
	require.Equal(t, int64(1000), stock(t, s, sku).Available)
}

func TestSoldOutScriptRefusesStaleGen(t *testing.T) {
	s, rdb := newStore(t)
	ctx := context.Background()
	sku := newSKU(t, rdb)
	_, err := s.Preheat(ctx, sku, 0, 4)
	require.NoError(t, err)
	keys := []string{genKey(sku), soldOutKey(sku)}

	observed, err := rdb.Get(ctx, genKey(sku)).Int64()
	require.NoError(t, err)
	// A restock lands while the buyer is still probing.
	added, err := s.Restock(ctx, sku, "restock-during-probe", 3)
	require.NoError(t, err)
	require.True(t, added)

	set, err := soldOutScript.Run(ctx, rdb, keys, observed, s.soldOutMs).Int64()
	require.NoError(t, err)
	require.Equal(t, int64(0), set, "stale gen must not set the flag")
	sold, err := s.SoldOut(ctx, sku)
	require.NoError(t, err)
	require.False(t, sold)

	current, err := rdb.Get(ctx, genKey(sku)).Int64()
	require.NoError(t, err)
	set, err = soldOutScript.Run(ctx, rdb, keys, current, s.soldOutMs).Int64()
	require.NoError(t, err)
	require.Equal(t, int64(1), set)
	sold, err = s.SoldOut(ctx, sku)
	require.NoError(t, err)
	require.True(t, sold)
	ttl, err := rdb.PTTL(ctx, soldOutKey(sku)).Result()
	require.NoError(t, err)
	require.Greater(t, ttl, time.Duration(0), "flag must expire by itself")
	require.LessOrEqual(t, ttl, testOpts.SoldOutTTL)
}

func TestPreheat(t *testing.T) {
	s, rdb := newStore(t)
	ctx := context.Background()

	tests := []struct {
		available int64
		buckets   int
		want      []int64
	}{
		{available: 10, buckets: 3, want: []int64{4, 3, 3}},
		{available: 5, buckets: 8, want: []int64{1, 1, 1, 1, 1, 0, 0, 0}},
		{available: 0, buckets: 4, want: []int64{0, 0, 0, 0}},
		{available: 7, buckets: 1, want: []int64{7}},
		{available: 1 << 40, buckets: 2, want: []int64{1 << 39, 1 << 39}},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%d/%d", tc.available, tc.buckets), func(t *testing.T) {
			sku := newSKU(t, rdb)
			res, err := s.Preheat(ctx, sku, tc.available, tc.buckets)
			require.NoError(t, err)
			require.Equal(t, PreheatResult{RedisAvailable: tc.available, Buckets: tc.buckets}, res)
			st := stock(t, s, sku)
			require.Equal(t, tc.want, st.PerBucket)
			require.False(t, st.SoldOut)
		})
	}

	t.Run("re-preheat with fewer buckets removes the extra ones", func(t *testing.T) {
		sku := newSKU(t, rdb)
		_, err := s.Preheat(ctx, sku, 100, 16)
		require.NoError(t, err)
		res, err := s.Preheat(ctx, sku, 10, 4)
		require.NoError(t, err)
		require.Equal(t, PreheatResult{RedisAvailable: 10, Buckets: 4}, res)
		for b := 4; b < 16; b++ {
			n, err := rdb.Exists(ctx, stockKey(sku, b)).Result()
			require.NoError(t, err)
			require.Zero(t, n, "bucket %d must be gone", b)
		}
		require.Equal(t, []int64{3, 3, 2, 2}, stock(t, s, sku).PerBucket)
	})

	t.Run("corrupt bucket count is repaired", func(t *testing.T) {
		sku := newSKU(t, rdb)
		require.NoError(t, rdb.Set(ctx, bucketsKey(sku), "garbage", 0).Err())
		require.NoError(t, rdb.Set(ctx, stockKey(sku, 700), 5, 0).Err())
		_, err := s.Reserve(ctx, "o", sku, 1)
		require.ErrorContains(t, err, "corrupt bucket count")

		res, err := s.Preheat(ctx, sku, 8, 4)
		require.NoError(t, err)
		require.Equal(t, PreheatResult{RedisAvailable: 8, Buckets: 4}, res)
		require.Zero(t, rdb.Exists(ctx, stockKey(sku, 700)).Val(), "stale bucket beyond the new count")
	})

	t.Run("preheat clears the sold-out flag", func(t *testing.T) {
		sku := newSKU(t, rdb)
		_, err := s.Preheat(ctx, sku, 0, 2)
		require.NoError(t, err)
		_, err = s.Reserve(ctx, "o", sku, 1)
		require.ErrorIs(t, err, &flashsale.Error{Code: flashsale.SoldOut})
		require.True(t, stock(t, s, sku).SoldOut)
		_, err = s.Preheat(ctx, sku, 5, 2)
		require.NoError(t, err)
		require.False(t, stock(t, s, sku).SoldOut)
	})

	t.Run("mismatch is detected", func(t *testing.T) {
		sku := newSKU(t, rdb)
		// Something changes a bucket between the write and the read-back
		// (a stray writer, a failover that lost a write).
		corrupt := New(rdb, testOpts)
		corrupt.beforeVerify = func(sku string) {
			require.NoError(t, rdb.DecrBy(ctx, stockKey(sku, 2), 3).Err())
		}
		res, err := corrupt.Preheat(ctx, sku, 40, 4)
		require.ErrorIs(t, err, &flashsale.Error{Code: flashsale.PreheatMismatch})
		require.Contains(t, err.Error(), "37")
		require.Contains(t, err.Error(), "40")
		require.Equal(t, PreheatResult{RedisAvailable: 37, Buckets: 4}, res)

		_, err = s.verifyPreheat(ctx, sku, 37)
		require.NoError(t, err)
		_, err = s.verifyPreheat(ctx, sku, 38)
		require.ErrorIs(t, err, &flashsale.Error{Code: flashsale.PreheatMismatch})
	})
}

func TestRestock(t *testing.T) {
	s, rdb := newStore(t)
	ctx := context.Background()
	sku := newSKU(t, rdb)
	_, err := s.Preheat(ctx, sku, 0, 4)
	require.NoError(t, err)
	_, err = s.Reserve(ctx, "early", sku, 1)
	require.ErrorIs(t, err, &flashsale.Error{Code: flashsale.SoldOut})
	require.True(t, stock(t, s, sku).SoldOut)

	sub := rdb.Subscribe(ctx, StockChangedChannel)
	defer sub.Close()
	// Wait for the subscription to be live, or the publish could be missed.
	_, err = sub.Receive(ctx)
	require.NoError(t, err)

	added, err := s.Restock(ctx, sku, "req-1", 5)
	require.NoError(t, err)
	require.True(t, added)
	requireMessage(t, sub.Channel(), sku)

	st := stock(t, s, sku)
	require.False(t, st.SoldOut, "restock must clear the flag")
	require.Equal(t, int64(5), st.Available)
	require.Equal(t, int64(5), st.PerBucket[startBucket("req-1", 4)], "units go to crc32(requestID)%N")

	added, err = s.Restock(ctx, sku, "req-1", 5)
	require.NoError(t, err)
	require.False(t, added, "same request id must not add twice")
	require.Equal(t, int64(5), stock(t, s, sku).Available)

	added, err = s.Restock(ctx, sku, "req-2", 2)
	require.NoError(t, err)
	require.True(t, added)
	require.Equal(t, int64(7), stock(t, s, sku).Available)

	r, err := s.Reserve(ctx, "after-restock", sku, 7)
	require.NoError(t, err)
	require.Equal(t, int64(7), r.Quantity)
}

func TestReleasePublishes(t *testing.T) {
	s, rdb := newStore(t)
	ctx := context.Background()
	sku := newSKU(t, rdb)
	_, err := s.Preheat(ctx, sku, 1, 1)
	require.NoError(t, err)
	_, err = s.Reserve(ctx, "o", sku, 1)
	require.NoError(t, err)

	sub := rdb.Subscribe(ctx, StockChangedChannel)
	defer sub.Close()
	_, err = sub.Receive(ctx)
	require.NoError(t, err)

	n, err := s.Release(ctx, "o", sku)
	require.NoError(t, err)
	require.Equal(t, int64(1), n)
	requireMessage(t, sub.Channel(), sku)
}

// requireMessage waits for sku on the stock-changed channel. Other tests
// share the channel, so their messages are skipped.
func requireMessage(t *testing.T, ch <-chan *redis.Message, sku string) {
	t.Helper()
	timeout := time.After(5 * time.Second)
	for {
		select {
		case msg := <-ch:
			require.Equal(t, StockChangedChannel, msg.Channel)
			if msg.Payload == sku {
				return
			}
		case <-timeout:
			t.Fatalf("no %s message for %s", StockChangedChannel, sku)
		}
	}
}

func TestNoScriptRecovery(t *testing.T) {
	s, rdb := newStore(t)
	ctx := context.Background()
	sku := newSKU(t, rdb)
	_, err := s.Preheat(ctx, sku, 32, 16)
	require.NoError(t, err)

	// SCRIPT FLUSH empties the script cache like a restart or a failover to
	// a fresh replica would. It does not touch data, so it is safe on the
	// shared Redis.
	require.NoError(t, rdb.ScriptFlush(ctx).Err())
	r, err := s.Reserve(ctx, "o1", sku, 5)
	require.NoError(t, err)
	require.Equal(t, int64(5), r.Quantity)

	// Release goes through a pipeline, where go-redis does not fall back
	// to EVAL by itself.
	require.NoError(t, rdb.ScriptFlush(ctx).Err())
	n, err := s.Release(ctx, "o1", sku)
	require.NoError(t, err)
	require.Equal(t, int64(5), n)

	require.NoError(t, rdb.ScriptFlush(ctx).Err())
	_, err = s.Reserve(ctx, "o2", sku, 40)
	require.ErrorIs(t, err, &flashsale.Error{Code: flashsale.SoldOut})

	require.NoError(t, rdb.ScriptFlush(ctx).Err())
	added, err := s.Restock(ctx, sku, "req", 1)
	require.NoError(t, err)
	require.True(t, added)
	require.Equal(t, int64(33), stock(t, s, sku).Available)
}

func TestStockAndDrift(t *testing.T) {
	s, rdb := newStore(t)
	ctx := context.Background()
	sku := newSKU(t, rdb)
	_, err := s.Preheat(ctx, sku, 9, 3)
	require.NoError(t, err)
	require.NoError(t, s.RecordDrift(ctx, sku, "refused-1", 2))
	require.NoError(t, s.RecordDrift(ctx, sku, "refused-2", 1))
	// A retried activity reports the same refusal again: counted once.
	require.NoError(t, s.RecordDrift(ctx, sku, "refused-1", 2))
	_, err = s.Reserve(ctx, orderStartingAt(t, "st", 1, 3), sku, 4)
	require.NoError(t, err)

	require.Equal(t, Stock{
		SKU: sku, Buckets: 3, PerBucket: []int64{3, 0, 2}, Available: 5, Drift: 3,
	}, stock(t, s, sku))
	sold, err := s.SoldOut(ctx, sku)
	require.NoError(t, err)
	require.False(t, sold)
}

func TestMarkerTTLs(t *testing.T) {
	s, rdb := newStore(t)
	ctx := context.Background()
	sku := newSKU(t, rdb)
	_, err := s.Preheat(ctx, sku, 1, 2) // 1,0
	require.NoError(t, err)
	order := orderStartingAt(t, "ttl", 1, 2) // probes the empty bucket first
	_, err = s.Reserve(ctx, order, sku, 1)
	require.NoError(t, err)

	zero, err := rdb.PTTL(ctx, orderKey(sku, 1, order)).Result()
	require.NoError(t, err)
	held, err := rdb.PTTL(ctx, orderKey(sku, 0, order)).Result()
	require.NoError(t, err)
	require.InDelta(t, testOpts.ZeroTTL.Seconds(), zero.Seconds(), 5)
	require.InDelta(t, testOpts.HeldTTL.Seconds(), held.Seconds(), 5)
	require.Equal(t, "0", rdb.Get(ctx, orderKey(sku, 1, order)).Val())
	require.Equal(t, "1", rdb.Get(ctx, orderKey(sku, 0, order)).Val())

	_, err = s.Release(ctx, order, sku)
	require.NoError(t, err)
	require.Equal(t, "r1", rdb.Get(ctx, orderKey(sku, 0, order)).Val())
	held, err = rdb.PTTL(ctx, orderKey(sku, 0, order)).Result()
	require.NoError(t, err)
	require.InDelta(t, testOpts.HeldTTL.Seconds(), held.Seconds(), 5, "KEEPTTL keeps the held TTL")
}
