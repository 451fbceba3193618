//go:build integration

package orderdb_test

// BenchmarkHotRow measures creates/s on one SKU through a delay relay in
// front of MariaDB (issue 26, item 4): every statement order the store
// has had or could have, at 1, 8 and 32 connections, in one run. The
// machine is shared, so the paths take turns: each round runs every path
// for a slice of time, in a rotating order, and the medians over the
// rounds are reported with their ratios to today's order. Reproduce (the
// table in docs/bench/hotrow.md):
//
//	go test -tags integration -run '^$' -bench HotRow -benchtime 1x ./internal/orderdb/
//
// HOTROW_DELAY sets the one-way delay (default 125us, a 0.25 ms round
// trip), HOTROW_ROUNDS (5) and HOTROW_SLICE (1s) the turns; the "rtt" row
// measures what a round trip through the relay really costs (SELECT 1).

import (
	"context"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flashsale/flashsale"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"

	"github.com/flashsale/flashsale/internal/orderdb"
	"github.com/flashsale/flashsale/internal/testenv"
)

// benchBuckets is the bucket rows' count in the benchmark: Redis's default.
const benchBuckets = flashsale.DefaultBuckets

type createFunc func(*orderdb.Store, context.Context, orderdb.NewOrder) (orderdb.Order, error)

// hotRowPaths are the statement orders compared, by name.
var hotRowPaths = []struct {
	name   string
	create createFunc
	// setup prepares the SKU after PutSKU, when the path needs it.
	setup func(*orderdb.Store, context.Context, string) error
}{
	// 5a438e2's order: UPDATE first, then SELECT FOR UPDATE, SUM, INSERTs.
	{name: "today", create: (*orderdb.Store).CreateOrderLegacy},
	// The textbook: SELECT ... FOR UPDATE, decide, UPDATE, SUM, INSERTs.
	{name: "for-update", create: (*orderdb.Store).CreateOrderForUpdate},
	// The store's CreateOrder: inserts first, the UPDATE last.
	{name: "short", create: (*orderdb.Store).CreateOrder},
	// The store's CreateOrder on a SKU split into bucket rows (SplitStock,
	// as a preheat does).
	{
		name:   "buckets",
		create: (*orderdb.Store).CreateOrder,
		setup: func(s *orderdb.Store, ctx context.Context, sku string) error {
			_, err := s.SplitStock(ctx, sku, benchBuckets)
			return err
		},
	},
}

func BenchmarkHotRow(b *testing.B) {
	ctx := context.Background()
	delay := envDuration(b, "HOTROW_DELAY", 125*time.Microsecond)
	slice := envDuration(b, "HOTROW_SLICE", time.Second)
	rounds := 5
	if v := os.Getenv("HOTROW_ROUNDS"); v != "" {
		n, err := strconv.Atoi(v)
		require.NoError(b, err)
		rounds = n
	}
	cfg, err := mysql.ParseDSN(testenv.MySQLDSN(b))
	require.NoError(b, err)
	cfg.Addr, _ = testenv.DelayRelay(b, cfg.Addr, delay)
	s, err := orderdb.Open(ctx, cfg.FormatDSN())
	require.NoError(b, err)
	b.Cleanup(func() { _ = s.Close() })
	run := testenv.UniqueID(b)
	var skus atomic.Int64

	b.Run("rtt", func(b *testing.B) {
		for b.Loop() {
			require.NoError(b, s.DB().Exec("SELECT 1").Error)
		}
	})
	for _, conns := range []int{1, 8, 32} {
		b.Run(fmt.Sprintf("conns=%d", conns), func(b *testing.B) {
			rates := make([][]float64, len(hotRowPaths))
			for r := range rounds {
				for k := range hotRowPaths {
					// Rotate who goes first, so no path always runs on
					// the heels of the same one.
					i := (k + r) % len(hotRowPaths)
					p := hotRowPaths[i]
					sku := fmt.Sprintf("hot-%s-%d", run, skus.Add(1))
					_, err := s.PutSKU(ctx, flashsale.SKU{ID: sku, Total: 1 << 40, Price: 100, Buckets: benchBuckets, PerUserLimit: 1})
					require.NoError(b, err)
					if p.setup != nil {
						require.NoError(b, p.setup(s, ctx, sku))
					}
					rates[i] = append(rates[i], createFor(b, s, p.create, sku, conns, slice))
				}
			}
			today := median(rates[0])
			for i, p := range hotRowPaths {
				m := median(rates[i])
				b.ReportMetric(m, p.name+"-creates/s")
				if i > 0 {
					b.ReportMetric(m/today, p.name+"/today")
				}
				b.Logf("conns=%d %-10s creates/s by round %v, median %.0f", conns, p.name, rounds1(rates[i]), m)
			}
		})
	}
}

// createFor runs creates of one unit of sku, each for a new buyer, on
// conns connections for d, and returns the creates per second.
func createFor(b *testing.B, s *orderdb.Store, create createFunc, sku string, conns int, d time.Duration) float64 {
	ctx := context.Background()
	var done atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	deadline := start.Add(d)
	for c := range conns {
		wg.Go(func() {
			for n := 0; time.Now().Before(deadline); n++ {
				o := orderdb.NewOrder{
					OrderID: fmt.Sprintf("%s-%d-%d", sku, c, n), UserID: fmt.Sprintf("u%d-%d", c, n),
					Items: []flashsale.Item{{SKU: sku, Quantity: 1}}, PayBy: time.Now().Add(15 * time.Minute),
				}
				if _, err := create(s, ctx, o); err != nil {
					b.Error(err)
					return
				}
				done.Add(1)
			}
		})
	}
	wg.Wait()
	return float64(done.Load()) / time.Since(start).Seconds()
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}

func rounds1(xs []float64) []int {
	out := make([]int, len(xs))
	for i, x := range xs {
		out[i] = int(math.Round(x))
	}
	return out
}

func envDuration(b *testing.B, key string, def time.Duration) time.Duration {
	v := os.Getenv(key)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	require.NoError(b, err)
	return d
}
