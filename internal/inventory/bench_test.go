//go:build integration

package inventory

import (
	"context"
	"fmt"
	"runtime"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

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

// benchRoundOps is how many calls each side of one paired round makes.
const benchRoundOps = 2000

// BenchmarkReserveVsRaw is the bench's "redis Reserve vs raw EVALSHA" pair
// in one run: every iteration is a round of benchRoundOps 1-unit Reserves
// on a SKU with the given bucket count, then as many bare EVALSHAs of
// take.lua, both at the same concurrency, alternating so that noise on a
// shared machine hits both sides alike. It reports the median over rounds
// of Reserve's throughput as a fraction of the raw script's (reserve/raw;
// 1 would mean Reserve costs nothing beyond its one script call). Run it
// with a fixed round count: -bench ReserveVsRaw -benchtime 20x.
func BenchmarkReserveVsRaw(b *testing.B) {
	for _, buckets := range []int{1, 16} {
		b.Run(fmt.Sprintf("buckets=%d", buckets), func(b *testing.B) {
			s, rdb := newStore(b)
			ctx := context.Background()
			sku := newSKU(b, rdb)
			_, err := s.Preheat(ctx, sku, int64(2*benchRoundOps*(b.N+1)+16*buckets), buckets)
			require.NoError(b, err)
			raw := newSKU(b, rdb)
			require.NoError(b, rdb.Set(ctx, stockKey(raw, 0), 1<<50, 0).Err())
			require.NoError(b, s.LoadScripts(ctx))

			conc := benchParallelism * runtime.GOMAXPROCS(0)
			round := func(name string, i int, op func(id string) error) time.Duration {
				var seq atomic.Int64
				var wg sync.WaitGroup
				start := time.Now()
				for range conc {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for {
							k := seq.Add(1)
							if k > benchRoundOps {
								return
							}
							if err := op(fmt.Sprintf("%s-%d-%d", name, i, k)); err != nil {
								b.Error(err)
								return
							}
						}
					}()
				}
				wg.Wait()
				return time.Since(start)
			}
			var ratios []float64
			var reserveTotal time.Duration
			b.ResetTimer()
			for i := range b.N {
				r := round("res", i, func(id string) error {
					_, err := s.Reserve(ctx, id, sku, 1)
					return err
				})
				w := round("raw", i, func(id string) error { return s.RawTake(ctx, raw, 0, id) })
				reserveTotal += r
				ratios = append(ratios, float64(w)/float64(r))
			}
			b.StopTimer()
			sort.Float64s(ratios)
			b.ReportMetric(ratios[len(ratios)/2], "reserve/raw")
			b.ReportMetric(float64(reserveTotal.Nanoseconds())/float64(b.N*benchRoundOps), "ns/reserve")
		})
	}
}
