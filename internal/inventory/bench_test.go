//go:build integration

package inventory

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// benchParallelism x GOMAXPROCS goroutines keep enough requests in flight
// to load Redis even on a small machine, like many API handlers would.
const benchParallelism = 16

// BenchmarkReserve measures one successful 1-unit Reserve under parallel
// load. With one bucket every call serialises on one key; with 16 the load
// spreads over 16 keys (and, on a cluster, 16 slots). On a single Redis node
// the server is single-threaded either way, so the gap shows mostly on a
// cluster; here it shows the cost of bucketing (none on the happy path).
func BenchmarkReserve(b *testing.B) {
	for _, buckets := range []int{1, 16} {
		b.Run(fmt.Sprintf("buckets=%d", buckets), func(b *testing.B) {
			s, rdb := newStore(b)
			ctx := context.Background()
			sku := newSKU(b, rdb)
			// Twice what the run needs, so no buyer walks into empty buckets
			// and the numbers are the happy path.
			_, err := s.Preheat(ctx, sku, int64(2*b.N+16*buckets), buckets)
			require.NoError(b, err)

			var seq atomic.Int64
			b.ReportAllocs()
			b.SetParallelism(benchParallelism)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					order := "bench-" + strconv.FormatInt(seq.Add(1), 10)
					if _, err := s.Reserve(ctx, order, sku, 1); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// BenchmarkRawEvalSha is the ceiling: bare EVALSHA of take.lua on one
// stock key, without the MGET of bucket count and gen that Reserve does.
func BenchmarkRawEvalSha(b *testing.B) {
	s, rdb := newStore(b)
	ctx := context.Background()
	sku := newSKU(b, rdb)
	require.NoError(b, rdb.Set(ctx, stockKey(sku, 0), 1<<50, 0).Err())
	require.NoError(b, takeScript.Load(ctx, rdb).Err())

	var seq atomic.Int64
	b.ReportAllocs()
	b.SetParallelism(benchParallelism)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			order := "raw-" + strconv.FormatInt(seq.Add(1), 10)
			err := takeScript.EvalSha(ctx, rdb,
				[]string{stockKey(sku, 0), orderKey(sku, 0, order)},
				1, s.heldMs, s.zeroMs).Err()
			if err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// TestRawTakeMovesStock keeps the benchmark's ceiling honest: RawTake must
// do the same work as a Reserve on one bucket.
func TestRawTakeMovesStock(t *testing.T) {
	s, rdb := newStore(t)
	ctx := context.Background()
	sku := newSKU(t, rdb)
	_, err := s.Preheat(ctx, sku, 2, 1)
	require.NoError(t, err)
	require.NoError(t, s.LoadScripts(ctx))
	require.NoError(t, s.RawTake(ctx, sku, 0, "o1"))
	require.NoError(t, s.RawTake(ctx, sku, 0, "o1")) // idempotent replay
	st, err := s.Stock(ctx, sku)
	require.NoError(t, err)
	require.Equal(t, int64(1), st.Available)
}
