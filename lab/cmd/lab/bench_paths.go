package main

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/flashsale/flashsale/internal/buildinfo"
	"github.com/flashsale/flashsale/internal/demo"
	"github.com/flashsale/flashsale/internal/httpapi"
	"github.com/flashsale/flashsale/internal/procstat"
	"github.com/flashsale/flashsale/lab/bench"
)

// baseline sets whole durable orders against what most teams start with:
// SELECT ... FOR UPDATE + UPDATE on one hot MySQL row.
func (b *benchRun) baseline(ctx context.Context, st *stack, sku string) error {
	b.logf("MySQL: %d rounds of %d hot-row orders against %d durable orders", b.p.Rounds, b.p.MySQLRound, b.p.OrderRound/2)
	db, err := sql.Open("mysql", st.Backend.Config.MySQLDSN)
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(b.p.Concurrency)
	c, err := bench.Paired(ctx, "baseline without Redis and Temporal", b.p.Rounds,
		func(ctx context.Context, n int) (bench.Stat, error) {
			_, w := bench.Orders(ctx, st.svc, sku, 100, fmt.Sprintf("base%d", n), max(1, b.p.OrderRound/2), b.p.Concurrency)
			return w, nil
		},
		func(ctx context.Context, n int) (bench.Stat, error) {
			return bench.MySQLHotRow(ctx, db, fmt.Sprintf("%s-%d", b.run, n), b.p.MySQLRound, b.p.Concurrency)
		}, "whole durable order vs SELECT FOR UPDATE + UPDATE on one hot row")
	if err != nil {
		return err
	}
	b.r.Comparisons = append(b.r.Comparisons, c)
	return nil
}

// edges measures the sold-out path through HTTP against a hello-world
// handler, by the Go load generator and by wrk, and the Redis deduct
// against raw EVALSHA.
func (b *benchRun) edges(ctx context.Context, st *stack) error {
	conc := b.p.Concurrency
	hc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: conc, MaxConnsPerHost: conc}}
	soldOut := "bench-soldout-" + b.run
	if err := st.CreateSKU(ctx, soldOut, 0, 100, 16); err != nil {
		return err
	}
	body := func(i int) []byte {
		return fmt.Appendf(nil, `{"client_order_id":"so-%s-%d","items":[{"sku_id":%q,"quantity":1}]}`, b.run, i, soldOut)
	}
	// Many buyers, each with a token minted before the clock starts, as a
	// crowd logged in before the sale would be; hello world gets the same
	// headers.
	tokens := make([]http.Header, 256)
	wrkHeaders := make([][]string, len(tokens))
	for i := range tokens {
		tok, err := st.Buyers.Token(fmt.Sprintf("u-%d", i), time.Hour)
		if err != nil {
			return err
		}
		tokens[i] = http.Header{"Authorization": {"Bearer " + tok}}
		wrkHeaders[i] = []string{"Authorization: Bearer " + tok}
	}
	header := func(i int) http.Header { return tokens[i%len(tokens)].Clone() }
	url := st.URL + "/api/v1/orders"
	// Warm, and check what the path answers: the first buyer learns "sold
	// out", every later one is shed with 409 too. wrk counts only non-2xx,
	// so this is where the answer itself is checked.
	if w := bench.HTTP(ctx, "warm", hc, url, body, header, http.StatusConflict, 50, 4); w.Errors > 0 {
		return fmt.Errorf("sold-out path: %d errors: %s", w.Errors, w.FirstError)
	}
	hello := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		_, _ = w.Write([]byte("hello"))
	}))
	defer hello.Close()

	b.logf("HTTP, Go load generator: %d rounds of %d sold-out requests vs hello world", b.p.Rounds, b.p.HTTPRound)
	goPair, err := bench.Paired(ctx, "http sold-out path (Go load generator)", b.p.Rounds,
		func(ctx context.Context, _ int) (bench.Stat, error) {
			return bench.HTTP(ctx, "sold-out rejection via the API", hc, url, body, header, http.StatusConflict, b.p.HTTPRound, conc), nil
		},
		func(ctx context.Context, _ int) (bench.Stat, error) {
			return bench.HTTP(ctx, "hello-world handler (ceiling)", hc, hello.URL, body, header, http.StatusOK, b.p.HTTPRound, conc), nil
		}, "")
	if err != nil {
		return err
	}

	b.logf("HTTP, wrk: %d rounds of %s each", b.p.Rounds, b.p.WrkRound)
	wrkRound := func(name, target string, wantNon2xx bool, body string, headers [][]string) bench.Round {
		return func(ctx context.Context, _ int) (bench.Stat, error) {
			r, err := bench.Wrk(ctx, bench.WrkOptions{Name: name, URL: target, Threads: 2, Connections: conc,
				Duration: b.p.WrkRound, Body: body, Headers: headers})
			if err != nil {
				return bench.Stat{}, err
			}
			if r.SocketErrors > 0 {
				r.Errors, r.FirstError = r.SocketErrors, "socket errors"
			}
			if bad := map[bool]int64{true: r.Ops - r.Non2xx, false: r.Non2xx}[wantNon2xx]; bad > 0 {
				r.Errors += bad
				r.FirstError = fmt.Sprintf("%d answers of the wrong class (non-2xx %d of %d)", bad, r.Non2xx, r.Ops)
			}
			return r.Stat, nil
		}
	}
	wrkPair, err := bench.Paired(ctx, "http sold-out path (wrk)", b.p.Rounds,
		wrkRound("sold-out rejection via the API (wrk)", url, true, string(body(0)), wrkHeaders),
		wrkRound("hello-world handler (wrk)", hello.URL, false, string(body(0)), wrkHeaders), "")
	if err != nil {
		return err
	}
	// The same without a token or a client order id: a script's flood.
	// The sold-out answer comes before both, so it costs the same.
	anonymous := fmt.Sprintf(`{"items":[{"sku_id":%q,"quantity":1}]}`, soldOut)
	b.logf("HTTP, wrk without token or order_id: %d rounds of %s each", b.p.Rounds, b.p.WrkRound)
	wrkAnonPair, err := bench.Paired(ctx, "http sold-out path, no token or order_id (wrk)", b.p.Rounds,
		wrkRound("sold-out rejection via the API, anonymous (wrk)", url, true, anonymous, nil),
		wrkRound("hello-world handler, anonymous (wrk)", hello.URL, false, anonymous, nil), "")
	if err != nil {
		return err
	}
	if b.out != "" {
		if err := b.profileSoldOut(ctx, wrkRound("sold-out rejection via the API, profiled (wrk)", url, true, string(body(0)), wrkHeaders)); err != nil {
			return err
		}
	}
	// wrk only knew the answers were not 2xx: check that they are still
	// the sold-out answer and not, say, a rate limit.
	if w := bench.HTTP(ctx, "after", hc, url, body, header, http.StatusConflict, 50, 4); w.Errors > 0 {
		return fmt.Errorf("sold-out path after wrk: %d errors: %s", w.Errors, w.FirstError)
	}
	b.r.Comparisons = append(b.r.Comparisons, wrkPair, wrkAnonPair, goPair)
	for _, g := range []struct {
		name string
		c    bench.Comparison
	}{{"wrk (external)", wrkPair}, {"wrk (external), no token or order_id", wrkAnonPair}, {"Go load generator (in the bench)", goPair}} {
		b.r.HTTPSoldOut = append(b.r.HTTPSoldOut, bench.LoadGenFigure{
			Generator: g.name, SoldOutRPS: g.c.Measured.PerSec, SoldOutP99ms: g.c.Measured.P99ms,
			HelloRPS: g.c.Against.PerSec, HelloP99ms: g.c.Against.P99ms,
			Ratio: *g.c.RatioSpread, P99Ratio: *g.c.P99Ratio, Rounds: g.c.Rounds,
		})
	}

	b.logf("Redis: %d rounds of %d reservations with 1 and 16 buckets vs raw EVALSHA", b.p.Rounds, b.p.RedisRound)
	for _, buckets := range []int{1, 16} {
		c, err := bench.Paired(ctx, "redis deduct", b.p.Rounds,
			func(ctx context.Context, n int) (bench.Stat, error) {
				return bench.RedisReserve(ctx, st.Backend.Stock, fmt.Sprintf("%s-%d", b.run, n), buckets, b.p.RedisRound, conc)
			},
			func(ctx context.Context, n int) (bench.Stat, error) {
				return bench.RedisRawTake(ctx, st.Backend.Stock, fmt.Sprintf("%s-%d-%d", b.run, buckets, n), b.p.RedisRound, conc)
			}, "")
		if err != nil {
			return err
		}
		b.r.Comparisons = append(b.r.Comparisons, c)
	}
	return nil
}

// sale runs flash sales through the HTTP API where every winner pays, with
// the API's production settings: interleaved, on this API (latency cap on)
// and on a second instance of the same backend with the cap off, so that a
// lower admitted p99 bought with fewer orders a second would show. The
// first capped sale is the report's Sale, with its chart.
func (b *benchRun) sale(ctx context.Context, st *stack) error {
	uncapped, err := st.WithAPI(ctx, func(c *httpapi.Config) { c.AdmissionTargetLatency = -1 })
	if err != nil {
		return err
	}
	type saleSide struct {
		api    *demo.Stack
		on     bool
		label  string
		target string
	}
	sides := []saleSide{{st.Stack, true, "latency cap on (production default)", ""}, {uncapped, false, "latency cap off", ""}}
	if t := b.p.SaleTarget; t > 0 {
		alt, err := st.WithAPI(ctx, func(c *httpapi.Config) { c.AdmissionTargetLatency = t })
		if err != nil {
			return err
		}
		sides = append(sides, saleSide{alt, true, "latency cap at " + t.String(), "target " + t.String()})
	}
	if d := b.p.SaleRetryMax; d > 0 {
		alt, err := st.WithAPI(ctx, func(c *httpapi.Config) { c.AdmissionMaxRetryAfter = d })
		if err != nil {
			return err
		}
		sides = append(sides, saleSide{alt, true, "latency cap on, Retry-After at most " + d.String(), "retry-after " + d.String()})
	}
	var schedule []saleSide
	for range b.p.SaleRounds {
		schedule = append(schedule, sides...)
	}
	regs := map[*demo.Stack]*prometheus.Registry{}
	for _, side := range sides {
		reg := prometheus.NewRegistry()
		if err := side.api.API.RegisterMetrics(reg); err != nil {
			return err
		}
		regs[side.api] = reg
	}
	for i, side := range schedule {
		api, on, label := side.api, side.on, side.label
		buy0, err := bench.GatherHistograms(regs[api], "flashsale_buy_duration_seconds", "outcome")
		if err != nil {
			return err
		}
		b.logf("flash sale %d of %d (%s): %d units, %d buyers", i+1, len(schedule), label, b.p.SaleUnits, b.p.SaleBuyers)
		procs := b.procs(st)
		stopProfile, err := b.profileSale(i, label)
		if err != nil {
			return err
		}
		diag := b.startDiag(st, i, saleSideName(label))
		cpu0 := procstat.CPUOf(procs)
		s, err := b.saleOn(ctx, api, fmt.Sprintf("bench-sale-%s-%d", b.run, i))
		cpu := procstat.CPUOf(procs)
		stopProfile()
		diag.finish()
		if err != nil {
			return err
		}
		buy, err := bench.GatherHistograms(regs[api], "flashsale_buy_duration_seconds", "outcome")
		if err != nil {
			return err
		}
		srvAdmitted := buy["admitted"].Since(buy0["admitted"]).QuantileMs(0.99)
		srvShed := buy["shed"].Since(buy0["shed"]).QuantileMs(0.99)
		var use []string
		cpus := map[string]float64{}
		for j, p := range procs {
			cpus[p.Name] = (cpu[j] - cpu0[j]).Seconds()
			use = append(use, fmt.Sprintf("%s %.1f s", p.Name, cpus[p.Name]))
		}
		b.logf("sale: all reserved after %.1f s (%.0f orders/s); admitted p99 %.0f ms, shed p99 %.0f ms (by the API: %.0f, %.0f); started %d, reserved %d; %d requests; CPU: %s",
			s.TimeToReserveAll, s.OrdersPerSec, s.Admitted.P99ms, s.Shed.P99ms, srvAdmitted, srvShed, s.WorkflowsStarted, s.Reserved, s.Requests, strings.Join(use, ", "))
		if on && side.target == "" && b.r.Sale == nil {
			b.r.Sale = s
		}
		b.r.SaleCap = append(b.r.SaleCap, bench.SaleRound{Cap: on, Label: label, Variant: side.target, OrdersPerSec: s.OrdersPerSec,
			AllReservedS: s.TimeToReserveAll, AdmittedP99ms: s.Admitted.P99ms, ShedP99ms: s.Shed.P99ms,
			ServerAdmittedP99ms: srvAdmitted, ServerShedP99ms: srvShed, CPUs: cpus,
			Admitted: s.Admitted.Ops, WorkflowsStarted: s.WorkflowsStarted, Reserved: s.Reserved,
			Oversold: s.Oversold, Undersold: s.Undersold})
	}
	return nil
}

// profileSale CPU-profiles this process (API, worker and crowd) through
// sale i into the output directory, sale-<i>-<side>-cpu.pprof; the
// crowd's goroutines carry the label role=crowd (saleOn), so
// `go tool pprof -tagignore role=crowd` is the server's share and
// `-tagfocus role=crowd` the crowd's. Only for a run of the sale alone
// (--only sale), whose output is a directory of its own: a whole run's
// output is committed, and a profile per sale has no place there.
func (b *benchRun) profileSale(i int, label string) (stop func(), err error) {
	if b.out == "" || b.p.Only != "sale" {
		return func() {}, nil
	}
	f, err := os.Create(filepath.Join(b.out, fmt.Sprintf("sale-%d-%s-cpu.pprof", i, saleSideName(label))))
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			b.logf("sale profile: %v", err)
		}
	}, nil
}

// saleSideName is a side's label as a file name's part.
func saleSideName(label string) string {
	return strings.NewReplacer(" ", "-", "(", "", ")", "", ",", "").Replace(label)
}

// saleOn runs one sale of its own SKU through api and summarizes it.
func (b *benchRun) saleOn(ctx context.Context, api *demo.Stack, sku string) (*bench.Sale, error) {
	var s demo.Summary
	var err error
	// The crowd's goroutines (and the HTTP client's, which they start)
	// are labelled, so a profile of the sale tells the crowd's CPU from
	// the API's and the worker's in this one process.
	pprof.Do(ctx, pprof.Labels("role", "crowd"), func(ctx context.Context) {
		s, err = api.Sale(ctx, demo.SaleOptions{
			SKU: sku, Units: b.p.SaleUnits, Price: 100, Buckets: 16, Buyers: b.p.SaleBuyers,
			Concurrency: b.p.Concurrency, PayShare: 1, PaymentTimeout: b.cfg.PaymentTimeout, DuplicateClickShare: 0.05,
			Progress: os.Stderr, Seed: 1,
		})
	})
	if err != nil {
		return nil, err
	}
	sale := &bench.Sale{
		Units: b.p.SaleUnits, Buyers: b.p.SaleBuyers, Requests: s.Requests, Answers: s.Answers, WorkflowsStarted: s.WorkflowsStarted,
		Reserved: s.Reserved, Sold: s.Sold, Oversold: s.Oversold, Undersold: s.Undersold,
		TimeToReserveAll: s.TimeToReserveAll.Seconds(),
		Decision:         bench.Summarize("buy decision", slices.Clone(s.Load.Latencies), s.Elapsed),
		Histogram:        bench.LatencyHistogram(s.Load.Latencies),
		ByAnswer:         map[string]bench.Stat{},
	}
	if sale.TimeToReserveAll > 0 {
		sale.OrdersPerSec = float64(sale.Reserved) / sale.TimeToReserveAll
	}
	var admitted, shed []time.Duration
	for answer, lat := range s.Load.ByAnswer {
		sale.ByAnswer[answer] = bench.Summarize(answer, slices.Clone(lat), s.Elapsed)
		switch {
		case answer == "201":
			admitted = append(admitted, lat...)
		case strings.HasPrefix(answer, "409") || strings.HasPrefix(answer, "429"):
			shed = append(shed, lat...)
		}
	}
	sale.Admitted = bench.Summarize("admitted (201)", admitted, s.Elapsed)
	sale.Shed = bench.Summarize("shed (409 SOLD_OUT, 429 BUSY)", shed, s.Elapsed)
	for _, p := range s.Load.Timeline {
		sale.Timeline = append(sale.Timeline, bench.Point{Seconds: p.At.Seconds(), Reserved: p.Reserved, Left: b.p.SaleUnits - p.Reserved})
	}
	return sale, nil
}

// write saves the report and regenerates the README's tables.
func (b *benchRun) write(out, readme string) error {
	if err := b.r.WriteJSON(filepath.Join(out, "results.json")); err != nil {
		return err
	}
	md := b.r.Markdown()
	if err := os.WriteFile(filepath.Join(out, "results.md"), []byte(md), 0o644); err != nil {
		return err
	}
	if b.r.Sale != nil {
		if err := b.r.Sale.WriteChart(filepath.Join(out, "sale.png")); err != nil {
			return err
		}
	}
	if readme != "" {
		doc, err := os.ReadFile(readme)
		if err != nil {
			return err
		}
		next, err := bench.ReplaceBetween(string(doc), readmeBegin, readmeEnd, md)
		if err != nil {
			return fmt.Errorf("%s: %w", readme, err)
		}
		if err := os.WriteFile(readme, []byte(next), 0o644); err != nil {
			return err
		}
	}
	b.logf("wrote %s/results.json, results.md, sale.png and %s", out, readme)
	return nil
}

// profileSoldOut runs one more wrk round of the sold-out path under the CPU
// profiler (the API serves from this process) and writes the profile and
// its top functions to the output directory: soldout-cpu.pprof, and
// soldout-profile.txt from `go tool pprof -top` when a Go toolchain is on
// the PATH (it is under `go run ./starter bench`).
func (b *benchRun) profileSoldOut(ctx context.Context, round bench.Round) error {
	path := filepath.Join(b.out, "soldout-cpu.pprof")
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	// Closed below once the profile is written; this close is for the
	// early returns, whose error says more than a close's could.
	defer func() { _ = f.Close() }()
	b.logf("HTTP, wrk: one sold-out round of %s under the CPU profiler", b.p.WrkRound)
	if err := pprof.StartCPUProfile(f); err != nil {
		return fmt.Errorf("cpu profile: %w", err)
	}
	stat, err := round(ctx, 0)
	pprof.StopCPUProfile()
	if err != nil {
		return err
	}
	if stat.Errors > 0 {
		return fmt.Errorf("profiled sold-out round: %d errors: %s", stat.Errors, stat.FirstError)
	}
	if err := f.Close(); err != nil {
		return err
	}
	top, err := exec.CommandContext(ctx, "go", "tool", "pprof", "-top", "-nodecount=40", path).Output()
	if err != nil {
		b.logf("no profile text (go tool pprof: %v); the profile is %s", err, path)
		return nil
	}
	head := fmt.Sprintf("# The sold-out path under wrk (%d connections, %s), profiled in the process serving it\n"+
		"# (starter bench at %s; %.0f requests/s while profiled). Regenerate: go run ./starter bench\n\n",
		b.p.Concurrency, b.p.WrkRound, buildinfo.Read(), stat.PerSec)
	return os.WriteFile(filepath.Join(b.out, "soldout-profile.txt"), append([]byte(head), top...), 0o644)
}
