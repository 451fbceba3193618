package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flashsale/flashsale/internal/inventory"
	"github.com/flashsale/flashsale/internal/sale"
)

// entrants measures a fair sale's open at scale on the real Redis: n
// buyers enter a sale's queue (the enter script, as the API runs it), the
// sale opens (sale.Store.Open, as OpenSale runs it), and meanwhile another
// SKU's buys run their Redis calls in a loop (the door's read of the sale
// state, the reserve, then a release that puts the unit back), whose
// latency is compared with the same loop before the open. It reports the
// open's time, its slowest single Redis call, the Redis memory of the
// queue per entrant, and the other SKU's p50/p99/max, and writes them to
// -out as well.
//
//	go run ./lab/cmd/lab entrants [-n 1000000] [-out lab/results/entrants.md]
func runEntrants(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("entrants", flag.ContinueOnError)
	n := fs.Int("n", 1_000_000, "buyers in the queue at the open")
	addr := fs.String("redis", cmpEnv("REDIS_ADDR", "127.0.0.1:6379"), "Redis address")
	out := fs.String("out", "lab/results/entrants.md", "where to write the figures ('' for nowhere)")
	buyers := fs.Int("buyers", 8, "the other SKU's concurrent buyers")
	openOnly := fs.String("open", "", "(internal) open this SKU's sale and print the figures as JSON: the child process")
	seedOf := fs.String("seed", "", "(internal) the sale's id=seed, for -open")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *openOnly != "" {
		return openChild(ctx, *addr, *openOnly, *seedOf, stdout)
	}
	rdb := redis.NewClient(&redis.Options{Addr: *addr, PoolSize: 128})
	defer func() { _ = rdb.Close() }()

	tag := time.Now().UTC().Format("20060102T150405")
	sku, other := "lab-entrants-"+tag, "lab-other-"+tag
	inv := inventory.New(rdb, inventory.Options{})
	defer cleanup(context.WithoutCancel(ctx), rdb, sku, other)
	if _, err := inv.Preheat(ctx, other, 1_000_000, 16); err != nil {
		return fmt.Errorf("preheat %s: %w", other, err)
	}
	units := func(context.Context, string) (int64, error) { return 0, nil }
	seeds := &labSeeds{}
	st := sale.New(rdb, units).WithSeeds(seeds)
	if _, err := st.Prepare(ctx, sku, "lab-"+tag, time.Now().Add(time.Hour), time.Minute, int64(*n)); err != nil {
		return err
	}

	began := time.Now()
	if err := enterAll(ctx, st, sku, *n); err != nil {
		return err
	}
	enterTook := time.Since(began)
	key := "fs:{sku:" + sku + "}:sale"
	entered := memoryUsage(ctx, rdb, key+":entered")

	base := buyLoop(ctx, st, inv, other, *buyers, func() bool { return false }, 10*time.Second)

	// The open runs in a process of its own, as it does in the worker: the
	// shuffle's CPU and garbage are not this process's buy loop's.
	saleID := "lab-" + tag
	seed, _ := seeds.SaleSeed(ctx, saleID)
	var done atomic.Bool
	during := make(chan latencies, 1)
	go func() { during <- buyLoop(ctx, st, inv, other, *buyers, done.Load, 0) }()
	child, err := runOpenChild(ctx, *addr, sku, saleID+"="+seed)
	done.Store(true)
	dur := <-during
	if err != nil {
		return fmt.Errorf("open: %w", err)
	}
	serverMax, serverSlow := slowCalls(ctx, rdb, sku, child.Began)
	ranked := memoryUsage(ctx, rdb, key+":rank")

	var b strings.Builder
	fmt.Fprintf(&b, "# A fair sale's open at %d entrants\n\n", *n)
	fmt.Fprintf(&b, "`go run ./lab/cmd/lab entrants -n %d`, %s, Redis %s, this box (%d CPUs, shared).\n\n",
		*n, time.Now().UTC().Format(time.RFC3339), redisVersion(ctx, rdb), runtime.NumCPU())
	fmt.Fprintf(&b, "| figure | value |\n|---|---:|\n")
	fmt.Fprintf(&b, "| entrants ranked | %d |\n", child.Entrants)
	fmt.Fprintf(&b, "| entering them (the enter script, 64 at once) | %.1f s |\n", enterTook.Seconds())
	fmt.Fprintf(&b, "| **open** (freeze, read in chunks, shuffle, write ranks in chunks, reveal; a process of its own) | **%.1f s** |\n", child.Seconds)
	fmt.Fprintf(&b, "| Redis calls of the open | %d |\n", child.Calls)
	fmt.Fprintf(&b, "| slowest single call of the open, client side (its process's CPU and GC included) | %.1f ms |\n", child.SlowestMs)
	fmt.Fprintf(&b, "| slowest command of the open in Redis (SLOWLOG, >= %d us logged) | %.1f ms (%d over 10 ms) |\n",
		slowlogThreshold(ctx, rdb), millis(serverMax), serverSlow)
	fmt.Fprintf(&b, "| queue memory before the open (entered hash, MEMORY USAGE) | %d B per entrant |\n", entered/int64(*n))
	fmt.Fprintf(&b, "| queue memory after it (+ the ranks) | %d B per entrant |\n", (entered+ranked)/int64(*n))
	fmt.Fprintf(&b, "\nAnother SKU's buys meanwhile (%d buyers in a loop, each buy its Redis calls: the door's read of the sale state, "+
		"the reserve, the release), client-side latency:\n\n", *buyers)
	fmt.Fprintf(&b, "| | buys | p50 | p99 | max |\n|---|---:|---:|---:|---:|\n")
	fmt.Fprintf(&b, "| without the open (10 s) | %d | %.2f ms | %.2f ms | %.1f ms |\n", len(base), millis(base.q(0.5)), millis(base.q(0.99)), millis(base.q(1)))
	fmt.Fprintf(&b, "| during the open | %d | %.2f ms | %.2f ms | %.1f ms |\n", len(dur), millis(dur.q(0.5)), millis(dur.q(0.99)), millis(dur.q(1)))
	fmt.Fprint(stdout, b.String())
	if *out != "" {
		return os.WriteFile(*out, []byte(b.String()), 0o644)
	}
	return nil
}

// opened is what the child process reports of its open.
type opened struct {
	Entrants  int64     `json:"entrants"`
	Seconds   float64   `json:"seconds"`
	Calls     int64     `json:"calls"`
	SlowestMs float64   `json:"slowest_ms"`
	Began     time.Time `json:"began"`
}

// runOpenChild runs this command again to open sku's sale.
func runOpenChild(ctx context.Context, addr, sku, seed string) (opened, error) {
	self, err := os.Executable()
	if err != nil {
		return opened{}, err
	}
	outb, err := exec.CommandContext(ctx, self, "entrants", "-redis", addr, "-open", sku, "-seed", seed).Output()
	if err != nil {
		return opened{}, fmt.Errorf("%w: %s", err, outb)
	}
	var o opened
	return o, json.Unmarshal(outb, &o)
}

// openChild opens sku's sale on its own connection, timed call by call.
func openChild(ctx context.Context, addr, sku, seed string, stdout io.Writer) error {
	id, s, ok := strings.Cut(seed, "=")
	if !ok {
		return fmt.Errorf("-seed %q: want id=seed", seed)
	}
	seeds := &labSeeds{}
	seeds.m.Store(id, s)
	timer := &callTimer{}
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	rdb.AddHook(timer)
	defer func() { _ = rdb.Close() }()
	began := time.Now()
	o, err := sale.New(rdb, func(context.Context, string) (int64, error) { return 0, nil }).WithSeeds(seeds).Open(ctx, sku, nil)
	if err != nil {
		return err
	}
	return json.NewEncoder(stdout).Encode(opened{Entrants: o.Entrants, Seconds: time.Since(began).Seconds(), Calls: timer.calls.Load(),
		SlowestMs: millis(timer.max()), Began: began})
}

// slowCalls reads Redis's slow log for the commands on sku's keys since
// began: the slowest and how many took over 10 ms.
func slowCalls(ctx context.Context, rdb *redis.Client, sku string, began time.Time) (worst time.Duration, over10 int) {
	logs, _ := rdb.SlowLogGet(ctx, -1).Result()
	for _, l := range logs {
		if l.Time.Before(began.Add(-time.Second)) || !strings.Contains(fmt.Sprint(l.Args), sku) {
			continue
		}
		worst = max(worst, l.Duration)
		if l.Duration > 10*time.Millisecond {
			over10++
		}
	}
	return worst, over10
}

func slowlogThreshold(ctx context.Context, rdb *redis.Client) int64 {
	v := rdb.ConfigGet(ctx, "slowlog-log-slower-than").Val()
	var n int64
	_, _ = fmt.Sscan(v["slowlog-log-slower-than"], &n)
	return n
}

// enterAll enters n buyers, 64 at once.
func enterAll(ctx context.Context, st *sale.Store, sku string, n int) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for range 64 {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < int64(n); i = next.Add(1) - 1 {
				if _, err := st.Enter(ctx, sku, fmt.Sprintf("buyer-%07d", i)); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}

type latencies []time.Duration

func (l latencies) q(p float64) time.Duration {
	if len(l) == 0 {
		return 0
	}
	return l[min(int(p*float64(len(l))), len(l)-1)]
}

// buyLoop runs buyers buys of sku (state read, reserve, release) until
// stop says so or for d, and returns their latencies, sorted.
func buyLoop(ctx context.Context, st *sale.Store, inv *inventory.Store, sku string, buyers int, stop func() bool, d time.Duration) latencies {
	var mu sync.Mutex
	var all latencies
	end := time.Now().Add(d)
	var wg sync.WaitGroup
	for w := range buyers {
		wg.Go(func() {
			var mine latencies
			for i := 0; ctx.Err() == nil && !stop() && (d == 0 || time.Now().Before(end)); i++ {
				order := fmt.Sprintf("lab-%d-%d-%d", time.Now().UnixNano(), w, i)
				t0 := time.Now()
				_, err1 := st.StateOf(ctx, sku)
				_, err2 := inv.Reserve(ctx, order, sku, 1)
				_, err3 := inv.Release(ctx, order, sku)
				if err1 == nil && err2 == nil && err3 == nil {
					mine = append(mine, time.Since(t0))
				}
			}
			mu.Lock()
			all = append(all, mine...)
			mu.Unlock()
		})
	}
	wg.Wait()
	slices.Sort(all)
	return all
}

// callTimer is a go-redis hook keeping the slowest call (a command, a
// script or a pipeline) and the count.
type callTimer struct {
	mu    sync.Mutex
	worst time.Duration
	calls atomic.Int64
}

func (c *callTimer) note(t0 time.Time) {
	d := time.Since(t0)
	c.calls.Add(1)
	c.mu.Lock()
	c.worst = max(c.worst, d)
	c.mu.Unlock()
}

func (c *callTimer) max() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.worst
}

func (c *callTimer) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *callTimer) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		defer c.note(time.Now())
		return next(ctx, cmd)
	}
}

func (c *callTimer) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		defer c.note(time.Now())
		return next(ctx, cmds)
	}
}

// labSeeds keeps the lab sale's seed in memory (the worker keeps it in
// MySQL; the open's cost is Redis's).
type labSeeds struct{ m sync.Map }

func (s *labSeeds) KeepSaleSeed(_ context.Context, saleID, _, seed string) (string, error) {
	v, _ := s.m.LoadOrStore(saleID, seed)
	return v.(string), nil
}

func (s *labSeeds) SaleSeed(_ context.Context, saleID string) (string, error) {
	v, _ := s.m.Load(saleID)
	seed, _ := v.(string)
	return seed, nil
}

func memoryUsage(ctx context.Context, rdb *redis.Client, key string) int64 {
	return rdb.MemoryUsage(ctx, key).Val()
}

func redisVersion(ctx context.Context, rdb *redis.Client) string {
	for _, l := range strings.Split(rdb.Info(ctx, "server").Val(), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), "redis_version:"); ok {
			return v
		}
	}
	return "?"
}

// cleanup unlinks every key of the lab's SKUs.
func cleanup(ctx context.Context, rdb *redis.Client, skus ...string) {
	for _, sku := range skus {
		k := "fs:{sku:" + sku + "}:sale"
		_ = rdb.Unlink(ctx, k, k+":seq", k+":entered", k+":rank", k+":late").Err()
		iter := rdb.Scan(ctx, 0, "fs:{sku:"+sku+"*", 1000).Iterator()
		for iter.Next(ctx) {
			_ = rdb.Unlink(ctx, iter.Val()).Err()
		}
	}
}

func millis(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func cmpEnv(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}
