//go:build integration

package orderdb_test

// BenchmarkHotRow measures creates/s on one SKU through a delay relay in
// front of MariaDB (issue 26, item 4): every statement order the store
// has had or could have, at 1, 8 and 32 connections, in one run. Reproduce
// (the table in docs/bench/hotrow.md):
//
//	go test -tags integration -run '^$' -bench HotRow -benchtime 2s -count 3 ./internal/orderdb/
//
// HOTROW_DELAY sets the one-way delay (default 125us, a 0.25 ms round
// trip); the "rtt" rows measure what the relay really adds (SELECT 1).

import (
	"context"
	"fmt"
	"os"
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
	delay := 125 * time.Microsecond
	if v := os.Getenv("HOTROW_DELAY"); v != "" {
		d, err := time.ParseDuration(v)
		require.NoError(b, err)
		delay = d
	}
	cfg, err := mysql.ParseDSN(testenv.MySQLDSN(b))
	require.NoError(b, err)
	cfg.Addr, _ = testenv.DelayRelay(b, cfg.Addr, delay)
	s, err := orderdb.Open(ctx, cfg.FormatDSN())
	require.NoError(b, err)
	b.Cleanup(func() { _ = s.Close() })
	run := testenv.UniqueID(b)
	var rounds atomic.Int64

	b.Run("rtt", func(b *testing.B) {
		for b.Loop() {
			require.NoError(b, s.DB().Exec("SELECT 1").Error)
		}
	})
	for _, conns := range []int{1, 8, 32} {
		for _, p := range hotRowPaths {
			b.Run(fmt.Sprintf("%s/conns=%d", p.name, conns), func(b *testing.B) {
				sku := fmt.Sprintf("hot-%s-%d", run, rounds.Add(1))
				_, err := s.PutSKU(ctx, flashsale.SKU{ID: sku, Total: 1 << 40, Price: 100, Buckets: 16, PerUserLimit: 1})
				require.NoError(b, err)
				if p.setup != nil {
					require.NoError(b, p.setup(s, ctx, sku))
				}
				creates := func(n int) {
					o := orderdb.NewOrder{
						OrderID: fmt.Sprintf("%s-%d", sku, n), UserID: fmt.Sprintf("u%d", n),
						Items: []flashsale.Item{{SKU: sku, Quantity: 1}}, PayBy: time.Now().Add(15 * time.Minute),
					}
					if _, err := p.create(s, ctx, o); err != nil {
						b.Error(err)
					}
				}
				var next atomic.Int64
				var wg sync.WaitGroup
				b.ResetTimer()
				start := time.Now()
				for range conns {
					wg.Go(func() {
						for n := next.Add(1); n <= int64(b.N); n = next.Add(1) {
							creates(int(n))
						}
					})
				}
				wg.Wait()
				b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "creates/s")
			})
		}
	}
}
