//go:build integration

package saletraffic_test

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/flashsale/flashsale/internal/saletraffic"
	"github.com/flashsale/flashsale/internal/testenv"
)

var bounds = []float64{0.01, 0.1, 1}

func cleanup(t *testing.T, sku string) {
	rdb := testenv.Redis(t)
	t.Cleanup(func() {
		ctx := context.Background()
		iter := rdb.Scan(ctx, 0, saletraffic.Key(sku)+"*", 100).Iterator()
		for iter.Next(ctx) {
			_ = rdb.Unlink(ctx, iter.Val()).Err()
		}
	})
}

// Two instances count concurrently into one Redis; whichever reads sees
// both, exactly.
func TestTwoInstancesOneSale(t *testing.T) {
	sku := "tr-" + testenv.UniqueID(t)
	cleanup(t, sku)
	a := saletraffic.New(testenv.Redis(t), bounds)
	b := saletraffic.New(testenv.Redis(t), bounds)
	const per = 500
	var wg sync.WaitGroup
	for _, c := range []*saletraffic.Counter{a, b} {
		for range 4 {
			wg.Go(func() {
				for i := range per {
					if i%5 == 0 {
						c.Observe(sku, 201, false, 50*time.Millisecond) // admitted, second bucket
					} else {
						c.Observe(sku, 409, true, time.Millisecond) // shed, first bucket
					}
				}
			})
		}
	}
	wg.Wait()
	ctx := context.Background()
	// Both flush into one second, as two instances do.
	at := time.Now()
	require.NoError(t, a.Flush(ctx, at))
	require.NoError(t, b.Flush(ctx, at))
	// Nothing left to flush: a second flush adds nothing.
	require.NoError(t, a.Flush(ctx, at))

	const total = 2 * 4 * per
	for _, c := range []*saletraffic.Counter{a, b} {
		tr, err := c.Read(ctx, sku, at.Add(time.Second))
		require.NoError(t, err)
		require.Equal(t, map[string]int64{"201": total / 5, "409": total * 4 / 5}, tr.Answers)
		require.Equal(t, int64(total), tr.Recent)
		require.Equal(t, []uint64{0, total / 5, 0, 0}, tr.Admitted)
		require.Equal(t, []uint64{total * 4 / 5, 0, 0, 0}, tr.Shed)
	}
	// Outside the window only the totals remain.
	tr, err := a.Read(ctx, sku, at.Add(saletraffic.Window+2*time.Second))
	require.NoError(t, err)
	require.Equal(t, int64(total), tr.Answers["201"]+tr.Answers["409"])
	require.Zero(t, tr.Recent)
	require.Equal(t, []uint64{0, 0, 0, 0}, tr.Admitted)
	// The requests/s window is the last RateWindow: a second older than it
	// still counts for the p99, not for the rate.
	tr, err = a.Read(ctx, sku, at.Add(saletraffic.RateWindow+time.Second))
	require.NoError(t, err)
	require.Zero(t, tr.Recent)
	require.Equal(t, uint64(total/5), tr.Admitted[1])
}

// The hot path allocates nothing for a SKU already counted, and never
// talks to Redis: counting with Redis unreachable is the same.
func TestObserveIsLocal(t *testing.T) {
	sku := "tr-" + testenv.UniqueID(t)
	c := saletraffic.New(testenv.Redis(t), bounds)
	c.Observe(sku, 409, true, time.Millisecond)
	require.Zero(t, testing.AllocsPerRun(1000, func() { c.Observe(sku, 409, true, time.Millisecond) }))

	// A client pointed at a closed port: Observe still counts; the flush
	// fails and keeps the counts for the next one.
	closed := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})
	t.Cleanup(func() { _ = closed.Close() })
	down := saletraffic.New(closed, bounds)
	down.Observe(sku, 201, false, time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	require.Error(t, down.Flush(ctx, time.Now()))
}

// At most MaxSKUs are counted between flushes; a SKU idle for a minute
// makes room.
func TestSKUsAreCapped(t *testing.T) {
	id := testenv.UniqueID(t)
	c := saletraffic.New(testenv.Redis(t), bounds)
	ctx := context.Background()
	at := time.Now()
	for i := range saletraffic.MaxSKUs + 1 {
		sku := "tr-" + id + "-" + strconv.Itoa(i)
		cleanup(t, sku)
		c.Observe(sku, 409, true, time.Millisecond)
	}
	require.NoError(t, c.Flush(ctx, at))
	last := "tr-" + id + "-" + strconv.Itoa(saletraffic.MaxSKUs)
	tr, err := c.Read(ctx, last, at.Add(time.Second))
	require.NoError(t, err)
	require.Empty(t, tr.Answers, "the SKU past the cap was not counted")
	// Two flushes with nothing: idle, then dropped after a minute.
	require.NoError(t, c.Flush(ctx, at.Add(time.Second)))
	require.NoError(t, c.Flush(ctx, at.Add(2*time.Minute)))
	c.Observe(last, 409, true, time.Millisecond)
	require.NoError(t, c.Flush(ctx, at.Add(2*time.Minute)))
	tr, err = c.Read(ctx, last, at.Add(2*time.Minute+time.Second))
	require.NoError(t, err)
	require.Equal(t, map[string]int64{"409": 1}, tr.Answers)
}
