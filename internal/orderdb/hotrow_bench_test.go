//go:build integration

package orderdb_test

// BenchmarkHotRow measures creates/s on one SKU through a delay relay in
// front of MariaDB (issue 26, item 4): every statement order the store
// has had or could have, at 1, 8 and 32 connections, in one run. The
// machine is shared, so the paths take turns: each round runs every path
// for a slice of time, in a rotating order, and the medians over the
// rounds are reported with their ratios to today's order. Reproduce (the
// table in lab/results/hotrow.md):
//
//	go test -tags integration -run '^$' -bench HotRow -benchtime 1x ./internal/orderdb/
//
// HOTROW_DELAY sets the one-way delay (default 125us, a 0.25 ms round
// trip; 0s connects straight to MariaDB, no relay), HOTROW_ROUNDS (5) and
// HOTROW_SLICE (1s) the turns. The "rtt" row measures what a round trip
// through the relay really costs (SELECT 1), "rtt-straight" the same
// without the relay: their difference is the delay the relay added.
//
// Each path also reports its CPU per create (this process, client and
// relay, and mariadbd, from /proc) and how long a create holds the SKU's
// lock (hold-ms: from sending the stock move to COMMIT's answer, less one
// round trip). From the 1-connection figures the run predicts the rate at
// 8 and 32 connections (docs/capacity.md, check b):
//
//	rate = min(conns / latency at 1 conn, rows / hold)
//
// and prints the prediction beside the measurement.

import (
	"context"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flashsale/flashsale"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/flashsale/flashsale/internal/orderdb"
	"github.com/flashsale/flashsale/internal/procstat"
	"github.com/flashsale/flashsale/internal/testenv"
)

// benchBuckets is the bucket rows' count in the benchmark: Redis's default.
const benchBuckets = flashsale.DefaultBuckets

type createFunc func(*orderdb.Store, context.Context, orderdb.NewOrder) (orderdb.Order, error)

// hotRowPaths are the statement orders compared, by name.
var hotRowPaths = []struct {
	name   string
	create createFunc
	// rows is how many rows share the SKU's stock (the lock bound's
	// divisor).
	rows int
	// setup prepares the SKU after PutSKU, when the path needs it.
	setup func(*orderdb.Store, context.Context, string) error
}{
	// 5a438e2's order: UPDATE first, then SELECT FOR UPDATE, SUM, INSERTs.
	{name: "today", create: (*orderdb.Store).CreateOrderLegacy, rows: 1},
	// The textbook: SELECT ... FOR UPDATE, decide, UPDATE, SUM, INSERTs.
	{name: "for-update", create: (*orderdb.Store).CreateOrderForUpdate, rows: 1},
	// The store's CreateOrder: inserts first, the UPDATE last.
	{name: "short", create: (*orderdb.Store).CreateOrder, rows: 1},
	// The store's CreateOrder on a SKU split into bucket rows (SplitStock,
	// as a preheat does).
	{
		name:   "buckets",
		create: (*orderdb.Store).CreateOrder,
		rows:   benchBuckets,
		setup: func(s *orderdb.Store, ctx context.Context, sku string) error {
			_, err := s.SplitStock(ctx, sku, benchBuckets)
			return err
		},
	},
}

// slot is one path's measurement in one round.
type slot struct {
	rate               float64 // creates/s
	latency, hold      time.Duration
	clientCPU, dbCPU   time.Duration // per create
	creates, withHolds int64
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
	dsn := testenv.MySQLDSN(b)
	cfg, err := mysql.ParseDSN(dsn)
	require.NoError(b, err)
	if delay > 0 {
		cfg.Addr, _ = testenv.DelayRelay(b, cfg.Addr, delay)
	}
	s, err := orderdb.Open(ctx, cfg.FormatDSN())
	require.NoError(b, err)
	b.Cleanup(func() { _ = s.Close() })
	straight, err := orderdb.Open(ctx, dsn)
	require.NoError(b, err)
	b.Cleanup(func() { _ = straight.Close() })
	require.NoError(b, s.DB().Callback().Raw().Before("gorm:raw").Register("bench:hold", markHold))
	run := testenv.UniqueID(b)
	var skus atomic.Int64
	db, ok := procstat.FindPID("mariadbd")
	require.True(b, ok, "no mariadbd process on this machine: its CPU is part of the measurement")
	procs := []procstat.Proc{{Name: "client", PID: os.Getpid()}, {Name: "mariadbd", PID: db}}

	// A round trip is a median: on a shared machine a few late wake-ups
	// move the mean by more than the delay.
	roundTrip := func(b *testing.B, st *orderdb.Store) time.Duration {
		var lat []time.Duration
		for b.Loop() {
			t0 := time.Now()
			require.NoError(b, st.DB().Exec("SELECT 1").Error)
			lat = append(lat, time.Since(t0))
		}
		m := time.Duration(median(durations(lat)))
		b.ReportMetric(ms(m), "p50-ms")
		return m
	}
	var rtt time.Duration
	b.Run("rtt", func(b *testing.B) { rtt = roundTrip(b, s) })
	b.Run("rtt-straight", func(b *testing.B) { roundTrip(b, straight) })
	// at1 are the 1-connection medians per path, the prediction's inputs.
	at1 := make([]slot, len(hotRowPaths))
	for _, conns := range []int{1, 8, 32} {
		b.Run(fmt.Sprintf("conns=%d", conns), func(b *testing.B) {
			slots := make([][]slot, len(hotRowPaths))
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
					c0 := procstat.CPUOf(procs)
					sl := createFor(b, s, p.create, sku, conns, slice)
					c1 := procstat.CPUOf(procs)
					sl.clientCPU = (c1[0] - c0[0]) / time.Duration(max(sl.creates, 1))
					sl.dbCPU = (c1[1] - c0[1]) / time.Duration(max(sl.creates, 1))
					slots[i] = append(slots[i], sl)
				}
			}
			today := medianOf(slots[0], func(x slot) float64 { return x.rate })
			for i, p := range hotRowPaths {
				m := medianSlot(slots[i], rtt)
				if conns == 1 {
					at1[i] = m
				}
				b.ReportMetric(m.rate, p.name+"-creates/s")
				if i > 0 {
					b.ReportMetric(m.rate/today, p.name+"/today")
				}
				if m.hold > 0 {
					b.ReportMetric(ms(m.hold), p.name+"-hold-ms")
				}
				b.ReportMetric(ms(m.clientCPU+m.dbCPU), p.name+"-cpu-ms/create")
				hold := "-"
				if m.hold > 0 {
					hold = fmt.Sprintf("%.2f ms", ms(m.hold))
				}
				b.Logf("conns=%d %-10s creates/s by round %v, median %.0f; latency %.2f ms; stock move to COMMIT's answer less a round trip %s (at 1 conn: the lock's hold); cpu per create: client+relay %.3f ms, mariadbd %.3f ms (bound %.0f/s per core)",
					conns, p.name, rounds1(slots[i]), m.rate, ms(m.latency), hold, ms(m.clientCPU), ms(m.dbCPU), 1/(m.clientCPU+m.dbCPU).Seconds())
				if conns > 1 && at1[i].hold > 0 {
					byConns := float64(conns) / at1[i].latency.Seconds()
					byRows := float64(p.rows) / at1[i].hold.Seconds()
					pred, bound := byConns, "conns/latency"
					if byRows < pred {
						pred, bound = byRows, "rows/hold"
					}
					b.ReportMetric(pred, p.name+"-predicted/s")
					b.Logf("conns=%d %-10s predicted %.0f/s (%s; conns/latency %.0f, rows/hold %.0f), measured %.0f/s: %.2fx",
						conns, p.name, pred, bound, byConns, byRows, m.rate, m.rate/pred)
				}
			}
		})
	}
}

// holdKey carries a create's *holdMark in its context.
type holdKey struct{}

// holdMark is when a create sent its stock move: the statement that takes
// the SKU's (or its bucket's) row lock, kept until COMMIT.
type holdMark struct{ sent time.Time }

// markHold is a GORM callback stamping a create's stock move.
func markHold(db *gorm.DB) {
	m, ok := db.Statement.Context.Value(holdKey{}).(*holdMark)
	if !ok || !m.sent.IsZero() {
		return
	}
	if sql := db.Statement.SQL.String(); strings.HasPrefix(sql, "UPDATE inventory") {
		m.sent = time.Now()
	}
}

// createFor runs creates of one unit of sku, each for a new buyer, on
// conns connections for d: the creates per second, their mean latency
// and the mean time from sending the stock move to the create's return.
func createFor(b *testing.B, s *orderdb.Store, create createFunc, sku string, conns int, d time.Duration) slot {
	var done, holds, lat, held atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	deadline := start.Add(d)
	for c := range conns {
		wg.Go(func() {
			for n := 0; time.Now().Before(deadline); n++ {
				o := orderdb.NewOrder{
					Order: flashsale.Order{OrderID: fmt.Sprintf("%s-%d-%d", sku, c, n), UserID: fmt.Sprintf("u%d-%d", c, n),
						Items: []flashsale.Item{{SKU: sku, Quantity: 1}}},
					PayBy: time.Now().Add(15 * time.Minute),
				}
				var m holdMark
				t0 := time.Now()
				if _, err := create(s, context.WithValue(context.Background(), holdKey{}, &m), o); err != nil {
					b.Error(err)
					return
				}
				t1 := time.Now()
				done.Add(1)
				lat.Add(int64(t1.Sub(t0)))
				if !m.sent.IsZero() {
					holds.Add(1)
					held.Add(int64(t1.Sub(m.sent)))
				}
			}
		})
	}
	wg.Wait()
	n := done.Load()
	sl := slot{rate: float64(n) / time.Since(start).Seconds(), creates: n, withHolds: holds.Load()}
	if n > 0 {
		sl.latency = time.Duration(lat.Load() / n)
	}
	if h := holds.Load(); h > 0 {
		sl.hold = time.Duration(held.Load() / h)
	}
	return sl
}

// medianSlot is the median of every figure over the rounds, each on its
// own. The lock's hold is the stock move's time to COMMIT's answer less
// one round trip: the move's request travels before the lock is taken and
// COMMIT's answer after it is released.
func medianSlot(xs []slot, rtt time.Duration) slot {
	dur := func(f func(slot) time.Duration) time.Duration {
		return time.Duration(medianOf(xs, func(x slot) float64 { return float64(f(x)) }))
	}
	m := slot{
		rate:      medianOf(xs, func(x slot) float64 { return x.rate }),
		latency:   dur(func(x slot) time.Duration { return x.latency }),
		hold:      max(0, dur(func(x slot) time.Duration { return x.hold })-rtt),
		clientCPU: dur(func(x slot) time.Duration { return x.clientCPU }),
		dbCPU:     dur(func(x slot) time.Duration { return x.dbCPU }),
	}
	for _, x := range xs {
		m.creates += x.creates
		m.withHolds += x.withHolds
	}
	return m
}

func medianOf(xs []slot, f func(slot) float64) float64 {
	v := make([]float64, len(xs))
	for i, x := range xs {
		v[i] = f(x)
	}
	return median(v)
}

func durations(ds []time.Duration) []float64 {
	out := make([]float64, len(ds))
	for i, d := range ds {
		out[i] = float64(d)
	}
	return out
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}

func rounds1(xs []slot) []int {
	out := make([]int, len(xs))
	for i, x := range xs {
		out[i] = int(math.Round(x.rate))
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
