package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/flashsale/flashsale/internal/identity"
	"github.com/flashsale/flashsale/internal/loadgen"
)

// The many-SKU section (--only skus): one hot SKU beside many cold ones,
// all open at once on one task queue of the production-shaped server
// (with matching.enableFairness on), each cold SKU's admitted and payment
// p99 against the same cold SKUs sold alone; the orders without a
// fairness key and with their SKU as key (ORDER_FAIRNESS_BY_SKU), two
// worker+API pairs on queues of their own, rounds interleaved: alone,
// mixed without key, mixed with key.

// skuRun is one side's round.
type skuRun struct {
	Side  string `json:"side"`
	Round int    `json:"round"`
	// Cold: the admitted (201) and payment-callback latencies of every
	// cold SKU pooled, and the worst single SKU's p99.
	ColdAdmittedP99ms      float64 `json:"cold_admitted_p99_ms"`
	ColdPayP99ms           float64 `json:"cold_payment_p99_ms"`
	ColdWorstAdmittedP99ms float64 `json:"cold_worst_sku_admitted_p99_ms"`
	ColdAllSoldS           float64 `json:"cold_last_sold_out_s"`
	HotOrdersPerSec        float64 `json:"hot_orders_per_sec,omitempty"`
	HotAdmittedP99ms       float64 `json:"hot_admitted_p99_ms,omitempty"`
	Oversold               int64   `json:"oversold"`
	Undersold              int64   `json:"undersold"`
	SKUs                   int     `json:"skus"`
}

// payTimer records how long payment callbacks take.
type payTimer struct {
	mu  sync.Mutex
	lat []time.Duration
	rt  http.RoundTripper
}

func (p *payTimer) RoundTrip(r *http.Request) (*http.Response, error) {
	t0 := time.Now()
	res, err := p.rt.RoundTrip(r)
	if strings.HasSuffix(r.URL.Path, "/payments/callback") {
		p.mu.Lock()
		p.lat = append(p.lat, time.Since(t0))
		p.mu.Unlock()
	}
	return res, err
}

func (b *benchRun) runSKUs(ctx context.Context) error {
	e, err := newServerEnv(ctx, b)
	if err != nil {
		return err
	}
	defer e.cleanup()
	// The deployed dynamic config plus fairness.
	dyn, err := os.ReadFile("deploy/temporal/dynamicconfig.yaml")
	if err != nil {
		return err
	}
	dynFile := filepath.Join(e.logs, "dynamicconfig-fairness.yaml")
	if err := os.WriteFile(dynFile, append(dyn, []byte("matching.enableFairness:\n  - value: true\n")...), 0o644); err != nil {
		return err
	}
	b.logf("skus: starting temporal-server on PostgreSQL with matching.enableFairness")
	srv, err := e.startProd(ctx, b, prodSide{name: "prod", noApp: true, env: []string{"TEMPORAL_DYNAMIC_CONFIG=" + dynFile}})
	if err != nil {
		return err
	}
	defer srv.close()
	front := fmt.Sprintf("127.0.0.1:%d", prodFrontend)
	nokey := &serverSide{name: "nokey", temporal: srv.temporal}
	key := &serverSide{name: "key", temporal: srv.temporal}
	defer nokey.close()
	defer key.close()
	if err := e.startApp(ctx, nokey, front, "lab-"+b.run+"-nokey", 7683); err != nil {
		return err
	}
	if err := e.startApp(ctx, key, front, "lab-"+b.run+"-key", 7684, "ORDER_FAIRNESS_BY_SKU=true"); err != nil {
		return err
	}
	var runs []skuRun
	for i := range b.p.SaleRounds {
		for _, side := range []struct {
			name string
			s    *serverSide
			hot  bool
		}{{"cold alone", nokey, false}, {"mixed, no key", nokey, true}, {"mixed, key per SKU", key, true}} {
			r, err := b.skuRound(ctx, e, side.s, side.name, i, side.hot)
			if err != nil {
				return err
			}
			runs = append(runs, r)
		}
	}
	raw, _ := json.MarshalIndent(map[string]any{"command": "go run ./lab/cmd/lab bench --only skus", "params": b.p,
		"started": b.started.UTC().Format(time.RFC3339), "load_average_before": loadAvg(), "runs": runs}, "", "  ")
	if err := os.WriteFile(filepath.Join(b.out, "skus.json"), raw, 0o644); err != nil {
		return err
	}
	md := skusMarkdown(runs, b.p)
	fmt.Print(md)
	return os.WriteFile(filepath.Join(b.out, "skus.md"), []byte(md), 0o644)
}

func (b *benchRun) skuRound(ctx context.Context, e *serverEnv, s *serverSide, side string, i int, hot bool) (skuRun, error) {
	r := skuRun{Side: side, Round: i, SKUs: b.p.ColdSKUs}
	tag := strings.NewReplacer(" ", "", ",", "").Replace(side)
	minter := &identity.Minter{Secret: []byte(e.secret["BUYER_JWT_SECRET"])}
	type sale struct {
		sku    string
		units  int64
		buyers int
		conc   int
		pay    *payTimer
		res    loadgen.Result
		err    error
	}
	var sales []*sale
	if hot {
		sales = append(sales, &sale{sku: fmt.Sprintf("hot-%s-%s-%d", b.run, tag, i), units: b.p.SaleUnits, buyers: b.p.SaleBuyers, conc: b.p.Concurrency})
	}
	for c := range b.p.ColdSKUs {
		sales = append(sales, &sale{sku: fmt.Sprintf("cold-%s-%s-%d-%d", b.run, tag, i, c), units: b.p.ColdUnits, buyers: b.p.ColdBuyers, conc: 2})
	}
	for _, sl := range sales {
		if err := e.createSKU(ctx, s.api, sl.sku, sl.units); err != nil {
			return r, err
		}
		sl.pay = &payTimer{rt: &http.Transport{MaxIdleConnsPerHost: sl.conc, MaxConnsPerHost: sl.conc * 2}}
	}
	b.logf("skus: round %d, %s: %d SKUs", i, side, len(sales))
	t0 := time.Now()
	var wg sync.WaitGroup
	var coldDone []time.Duration
	var mu sync.Mutex
	for j, sl := range sales {
		wg.Go(func() {
			sl.res, sl.err = loadgen.Run(ctx, loadgen.Config{BaseURL: s.api, SKU: sl.sku, Units: sl.units, Buyers: sl.buyers,
				Concurrency: sl.conc, WebhookSecret: e.secret["WEBHOOK_SECRET"], Tokens: minter, PayShare: 1,
				Deadline: 5 * time.Minute, Seed: uint64(j + 1), Client: &http.Client{Timeout: 30 * time.Second, Transport: sl.pay}})
			if !(hot && j == 0) {
				mu.Lock()
				coldDone = append(coldDone, time.Since(t0))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	var admitted, pays []time.Duration
	for j, sl := range sales {
		if sl.err != nil {
			return r, fmt.Errorf("sku %s: %w", sl.sku, sl.err)
		}
		r.Oversold += max(0, sl.res.Paid-sl.units)
		r.Undersold += max(0, sl.units-sl.res.Paid)
		if hot && j == 0 {
			r.HotAdmittedP99ms = p99ms(sl.res.ByAnswer["201"])
			if sl.res.TimeToReserveAll > 0 {
				r.HotOrdersPerSec = float64(sl.units) / sl.res.TimeToReserveAll.Seconds()
			}
			continue
		}
		admitted = append(admitted, sl.res.ByAnswer["201"]...)
		pays = append(pays, sl.pay.lat...)
		r.ColdWorstAdmittedP99ms = max(r.ColdWorstAdmittedP99ms, p99ms(sl.res.ByAnswer["201"]))
	}
	r.ColdAdmittedP99ms, r.ColdPayP99ms = p99ms(admitted), p99ms(pays)
	sort.Slice(coldDone, func(a, c int) bool { return coldDone[a] < coldDone[c] })
	if len(coldDone) > 0 {
		r.ColdAllSoldS = coldDone[len(coldDone)-1].Seconds()
	}
	b.logf("skus: round %d, %s: cold admitted p99 %.0f ms (worst SKU %.0f), payments p99 %.0f ms, hot %.1f orders/s (admitted p99 %.0f ms), oversold %d, undersold %d",
		i, side, r.ColdAdmittedP99ms, r.ColdWorstAdmittedP99ms, r.ColdPayP99ms, r.HotOrdersPerSec, r.HotAdmittedP99ms, r.Oversold, r.Undersold)
	return r, nil
}

func skusMarkdown(runs []skuRun, p benchParams) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Many SKUs at once (`go run ./lab/cmd/lab bench --only skus`)\n\n")
	fmt.Fprintf(&b, "One hot SKU (%d units, %d buyers, %d in flight) beside %d cold SKUs (%d units, %d buyers, 2 in flight each), one task queue per side, on one `temporal-server` (PostgreSQL 15, deploy/temporal dynamic config plus `matching.enableFairness: true`). Every winner pays. Rounds interleaved: cold alone, mixed without key, mixed with the SKU as fairness key.\n\n",
		p.SaleUnits, p.SaleBuyers, p.Concurrency, p.ColdSKUs, p.ColdUnits, p.ColdBuyers)
	b.WriteString("| side | round | cold admitted p99 ms | worst cold SKU p99 ms | cold payments p99 ms | last cold SKU sold out s | hot orders/s | hot admitted p99 ms | oversold | undersold |\n|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range runs {
		fmt.Fprintf(&b, "| %s | %d | %.0f | %.0f | %.0f | %.1f | %.1f | %.0f | %d | %d |\n", r.Side, r.Round, r.ColdAdmittedP99ms, r.ColdWorstAdmittedP99ms,
			r.ColdPayP99ms, r.ColdAllSoldS, r.HotOrdersPerSec, r.HotAdmittedP99ms, r.Oversold, r.Undersold)
	}
	return b.String()
}
