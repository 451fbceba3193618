package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flashsale/flashsale/internal/identity"
	"github.com/flashsale/flashsale/internal/jsoncall"
	"github.com/flashsale/flashsale/internal/loadgen"
	"github.com/flashsale/flashsale/lab/bench"
)

// serverRound is one sale on one server, with the unit-cost rounds that
// follow it on the same server.
type serverRound struct {
	Server       string  `json:"server"`
	Round        int     `json:"round"`
	Units        int64   `json:"units"`
	Buyers       int     `json:"buyers"`
	OrdersPerSec float64 `json:"orders_per_sec"`
	AllReservedS float64 `json:"all_reserved_s"`
	// AdmittedP99ms and ShedP99ms are the crowd's (201; 409 and 429).
	AdmittedP99ms float64          `json:"admitted_p99_ms"`
	ShedP99ms     float64          `json:"shed_p99_ms"`
	Answers       map[string]int64 `json:"answers"`
	Paid          int64            `json:"paid"`
	Oversold      int64            `json:"oversold"`
	Undersold     int64            `json:"undersold"`
	// CPUmsPerUnit is each process's CPU over the whole sale (payments
	// included) per unit sold; BoxBusy the whole machine's utilisation
	// (all cores) while units were being reserved, and OthersCores the
	// cores the box spent on anything but the sale's processes then.
	CPUmsPerUnit map[string]float64 `json:"cpu_ms_per_unit"`
	BoxBusy      float64            `json:"box_busy_while_reserving"`
	OthersCores  float64            `json:"others_cores_while_reserving"`
	// APIIdleShare is the share of the API's half-second samples, while
	// units were being reserved, with no placement in flight: buyers
	// waiting out their Retry-After while the instance had permits free
	// (0.42 of samples before BUSY's Retry-After was spread, 2026-12-07).
	APIIdleShare float64 `json:"api_idle_share_while_reserving"`
	// OrderCostMs is each process's CPU per whole order (reserve and pay)
	// measured alone at the sale's callers in flight (4 x that many
	// orders, one buyer a unit, so nothing is shed and the window is
	// mostly at full concurrency: the server and PostgreSQL batch as in
	// the sale); OrderCost4Ms the same at 4 in flight, which costs more
	// per order and so predicted the sale 20-33% low (kept to show why).
	// SoldOutCostMs per sold-out answer (409), 16 in flight; ShedCostMs
	// per shed answer (409 and 429 BUSY) in a calibration sale of 100
	// units to 500 buyers, what its orders (at OrderCostMs) leave of its
	// CPU. Predicted is the capacity model's orders/s (predictRate) from
	// OrderCostMs and ShedCostMs with this sale's sheds per unit, on the
	// cores the rest of the box left; Predicted4 the same from
	// OrderCost4Ms.
	OrderCostMs   map[string]float64 `json:"order_cost_ms"`
	OrderCost4Ms  map[string]float64 `json:"order_cost_4_in_flight_ms"`
	SoldOutCostMs map[string]float64 `json:"sold_out_cost_ms"`
	ShedCostMs    map[string]float64 `json:"shed_cost_ms"`
	ShedsPerUnit  float64            `json:"sheds_per_unit"`
	Predicted     float64            `json:"predicted_orders_per_sec"`
	Predicted4    float64            `json:"predicted_at_4_in_flight_orders_per_sec"`
	// ServerPersistence is the production-shaped server's persistence
	// latency by operation (mean ms over the sale), the slowest first.
	ServerPersistence []persistOp `json:"server_persistence,omitempty"`
	// ServerCPUTop is the top 10 of the production-shaped server's CPU
	// profile over the sale's first 20 s (remoteDiag).
	ServerCPUTop string `json:"server_cpu_top,omitempty"`
}

type persistOp struct {
	Op     string  `json:"op"`
	Calls  float64 `json:"calls"`
	MeanMs float64 `json:"mean_ms"`
}

// runServers is --only servers.
func (b *benchRun) runServers(ctx context.Context) error {
	e, err := newServerEnv(ctx, b)
	if err != nil {
		return err
	}
	defer e.cleanup()
	b.logf("starting the dev server side")
	dev, err := e.startDev(ctx, b)
	if err != nil {
		return err
	}
	defer dev.close()
	b.logf("starting the production-shaped side (temporal-server on PostgreSQL)")
	prod, err := e.startProd(ctx, b, prodSide{name: "prod"})
	if err != nil {
		return err
	}
	defer prod.close()
	var rounds []serverRound
	for i := range b.p.SaleRounds {
		for _, s := range []*serverSide{dev, prod} {
			r, err := b.serverSale(ctx, e, s, i, true)
			if err != nil {
				return err
			}
			rounds = append(rounds, r)
		}
	}
	shapes, err := b.serverShapes(ctx, []*serverSide{dev, prod})
	if err != nil {
		return err
	}
	raw, _ := json.MarshalIndent(map[string]any{"command": "go run ./lab/cmd/lab bench --only servers", "params": b.p,
		"started": b.started.UTC().Format(time.RFC3339), "load_average_before": loadAvg(), "rounds": rounds, "shapes": shapes}, "", "  ")
	if err := os.WriteFile(filepath.Join(b.out, "servers.json"), raw, 0o644); err != nil {
		return err
	}
	md := serversMarkdown(rounds, b.p.SaleUnits, b.p.SaleBuyers)
	var sh strings.Builder
	bench.WriteShapes(&sh, shapes)
	md += sh.String()
	fmt.Print(md)
	return os.WriteFile(filepath.Join(b.out, "servers.md"), []byte(md), 0o644)
}

// sampleIdle reads flashsale_admission_in_flight from the API's metrics
// every half second until done is set, and returns a func that stops it and
// answers the share of samples that found nothing in flight.
func sampleIdle(url string, done *atomic.Bool) func() float64 {
	var n, zero int
	stop := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(500 * time.Millisecond)
		defer t.Stop()
		for !done.Load() {
			select {
			case <-stop:
				return
			case <-t.C:
			}
			fams, err := scrape(url)
			if err != nil {
				continue
			}
			if f, ok := fams["flashsale_admission_in_flight"]; ok && len(f.GetMetric()) == 1 {
				n++
				if f.GetMetric()[0].GetGauge().GetValue() == 0 {
					zero++
				}
			}
		}
	}()
	return func() float64 {
		close(stop)
		<-finished
		return float64(zero) / float64(max(n, 1))
	}
}

func loadAvg() string {
	raw, _ := os.ReadFile("/proc/loadavg")
	return strings.TrimSpace(string(raw))
}

// serverSale sells b.p.SaleUnits to b.p.SaleBuyers on s, and with costs
// measures the unit costs and the prediction after it.
func (b *benchRun) serverSale(ctx context.Context, e *serverEnv, s *serverSide, i int, costs bool) (serverRound, error) {
	r := serverRound{Server: s.name, Round: i, Units: b.p.SaleUnits, Buyers: b.p.SaleBuyers}
	sku := fmt.Sprintf("lab-%s-%s-%d", b.run, s.name, i)
	if err := e.createSKU(ctx, s.api, sku, b.p.SaleUnits); err != nil {
		return r, err
	}
	minter := &identity.Minter{Secret: []byte(e.secret["BUYER_JWT_SECRET"])}
	groups := s.groups()
	persist0 := scrapePersistence(s.metrics)
	cpu0, busy0, idle0 := readCPU(groups), 0.0, 0.0
	busy0, idle0 = boxCPU()
	diag := b.startRemoteDiag(s, i)
	var reservedAll atomic.Bool
	idle := sampleIdle(strings.TrimSuffix(s.pprof["api"], "/debug/pprof")+"/metrics", &reservedAll)
	var once sync.Once
	var atAll cpuReading
	var busy1, idle1 float64
	b.logf("servers: sale %d on %s: %d units, %d buyers", i, s.name, b.p.SaleUnits, b.p.SaleBuyers)
	res, err := loadgen.Run(ctx, loadgen.Config{
		BaseURL: s.api, SKU: sku, Units: b.p.SaleUnits, Buyers: b.p.SaleBuyers, Concurrency: b.p.Concurrency,
		WebhookSecret: e.secret["WEBHOOK_SECRET"], Tokens: minter, PayShare: 1, DuplicateClickShare: 0.05,
		Deadline: 5 * time.Minute, Seed: uint64(i + 1),
		OnProgress: func(p loadgen.Progress) {
			if 2*p.Reserved >= b.p.SaleUnits {
				diag.midway()
			}
			if p.Reserved >= b.p.SaleUnits {
				once.Do(func() { atAll = readCPU(groups); busy1, idle1 = boxCPU(); reservedAll.Store(true) })
			}
		},
	})
	r.APIIdleShare = idle()
	if err != nil {
		return r, fmt.Errorf("sale on %s: %w", s.name, err)
	}
	cpu := readCPU(groups).since(cpu0)
	r.ServerPersistence = scrapePersistence(s.metrics).since(persist0)
	r.ServerCPUTop = diag.finish(ctx)
	r.Answers, r.Paid = res.Answers, res.Paid
	r.Oversold, r.Undersold = max(0, res.Paid-b.p.SaleUnits), max(0, b.p.SaleUnits-res.Paid)
	if res.TimeToReserveAll > 0 {
		r.AllReservedS = res.TimeToReserveAll.Seconds()
		r.OrdersPerSec = float64(b.p.SaleUnits) / r.AllReservedS
	}
	var admitted, shed []time.Duration
	for a, lat := range res.ByAnswer {
		switch {
		case a == "201":
			admitted = append(admitted, lat...)
		case strings.HasPrefix(a, "409") || strings.HasPrefix(a, "429"):
			shed = append(shed, lat...)
		}
	}
	r.AdmittedP99ms, r.ShedP99ms = p99ms(admitted), p99ms(shed)
	r.CPUmsPerUnit = map[string]float64{}
	for g, sec := range cpu {
		r.CPUmsPerUnit[g] = sec * 1000 / float64(max(res.Paid, 1))
	}
	var sheds int64
	for a, n := range res.Answers {
		if strings.HasPrefix(a, "409") || strings.HasPrefix(a, "429") {
			sheds += n
		}
	}
	if atAll != nil && busy1 > busy0 {
		r.BoxBusy = (busy1 - busy0) / (busy1 - busy0 + idle1 - idle0)
		var ours float64
		for _, sec := range atAll.since(cpu0) {
			ours += sec
		}
		r.OthersCores = max(0, (busy1-busy0)-ours) / r.AllReservedS
	}
	r.ShedsPerUnit = float64(sheds) / float64(b.p.SaleUnits)
	if costs {
		if err := b.unitCosts(ctx, e, s, i, sku, minter, &r); err != nil {
			return r, err
		}
	}
	b.logf("servers: %s sale %d: %.1f orders/s (predicted %.1f), all reserved %.1f s, admitted p99 %.0f ms, shed p99 %.0f ms, box %.0f%% busy (others %.2f cores), paid %d, answers %v, CPU ms/unit %v",
		s.name, i, r.OrdersPerSec, r.Predicted, r.AllReservedS, r.AdmittedP99ms, r.ShedP99ms, r.BoxBusy*100, r.OthersCores, r.Paid, r.Answers, roundMap(r.CPUmsPerUnit))
	return r, nil
}

// unitCosts measures, after sale i of sku on s, the unit costs the
// capacity model predicts from on the same server, and r's predictions.
func (b *benchRun) unitCosts(ctx context.Context, e *serverEnv, s *serverSide, i int, sku string, minter *identity.Minter, r *serverRound) error {
	var err error
	if r.OrderCostMs, err = b.orderCost(ctx, e, s, fmt.Sprintf("%d-cost", i), minter, 4*b.p.Concurrency, b.p.Concurrency); err != nil {
		return err
	}
	if r.OrderCost4Ms, err = b.orderCost(ctx, e, s, fmt.Sprintf("%d-cost4", i), minter, 60, 4); err != nil {
		return err
	}
	if r.SoldOutCostMs, err = e.shedCost(s, sku, minter, 3000); err != nil {
		return err
	}
	if r.ShedCostMs, err = b.calibrate(ctx, e, s, i, minter, r.OrderCostMs); err != nil {
		return err
	}
	cores := float64(runtime.NumCPU()) - r.OthersCores
	r.Predicted = predictRate(cores, r.OrderCostMs, r.ShedCostMs, r.ShedsPerUnit)
	r.Predicted4 = predictRate(cores, r.OrderCost4Ms, r.ShedCostMs, r.ShedsPerUnit)
	return nil
}

// orderCost sells n units to n buyers, conc in flight (no buyer is shed),
// every one paying, and returns each process's CPU ms per order.
func (b *benchRun) orderCost(ctx context.Context, e *serverEnv, s *serverSide, tag string, minter *identity.Minter, n, conc int) (map[string]float64, error) {
	sku := fmt.Sprintf("lab-%s-%s-%s", b.run, s.name, tag)
	if err := e.createSKU(ctx, s.api, sku, int64(n)); err != nil {
		return nil, err
	}
	groups := s.groups()
	cpu0 := readCPU(groups)
	res, err := loadgen.Run(ctx, loadgen.Config{BaseURL: s.api, SKU: sku, Units: int64(n), Buyers: n, Concurrency: conc,
		WebhookSecret: e.secret["WEBHOOK_SECRET"], Tokens: minter, PayShare: 1, Deadline: 3 * time.Minute, Seed: 99})
	if err != nil {
		return nil, err
	}
	if res.Paid != int64(n) {
		return nil, fmt.Errorf("order cost on %s (%d in flight): paid %d of %d (answers %v)", s.name, conc, res.Paid, n, res.Answers)
	}
	out := map[string]float64{}
	for g, sec := range readCPU(groups).since(cpu0) {
		out[g] = sec * 1000 / float64(n)
	}
	return out, nil
}

// predictRate is the capacity model: the orders a second cores serve when
// each order costs order (CPU ms by process) and brings shedsPerUnit shed
// answers of shed ms each: cores x 1000 / the sum over the processes of
// (order + shedsPerUnit x shed); 0 when nothing was measured.
func predictRate(cores float64, order, shed map[string]float64, shedsPerUnit float64) float64 {
	perUnit := 0.0
	for g := range order {
		perUnit += order[g] + shedsPerUnit*shed[g]
	}
	if perUnit <= 0 {
		return 0
	}
	return cores * 1000 / perUnit
}

// shedCostOf is each process's CPU ms per shed answer of a sale that
// spent cpu (seconds by process) on orders at order ms each and sheds
// shed answers: what the orders leave, never below zero.
func shedCostOf(cpu map[string]float64, orders int, order map[string]float64, sheds int64) map[string]float64 {
	out := map[string]float64{}
	for g, sec := range cpu {
		out[g] = max(0, sec*1000-float64(orders)*order[g]) / float64(max(sheds, 1))
	}
	return out
}

// calibrate sells 100 units to 500 buyers (the sale's callers in flight)
// and returns each process's CPU ms per shed answer (409, 429): what is
// left of its CPU once the orders are charged at order.
func (b *benchRun) calibrate(ctx context.Context, e *serverEnv, s *serverSide, i int, minter *identity.Minter, order map[string]float64) (map[string]float64, error) {
	const n = 100
	sku := fmt.Sprintf("lab-%s-%s-%d-cal", b.run, s.name, i)
	if err := e.createSKU(ctx, s.api, sku, n); err != nil {
		return nil, err
	}
	groups := s.groups()
	cpu0 := readCPU(groups)
	res, err := loadgen.Run(ctx, loadgen.Config{BaseURL: s.api, SKU: sku, Units: n, Buyers: 5 * n, Concurrency: b.p.Concurrency,
		WebhookSecret: e.secret["WEBHOOK_SECRET"], Tokens: minter, PayShare: 1, DuplicateClickShare: 0.05, Deadline: 3 * time.Minute, Seed: 77})
	if err != nil {
		return nil, err
	}
	if res.Paid != n {
		return nil, fmt.Errorf("calibration on %s: paid %d of %d (answers %v)", s.name, res.Paid, n, res.Answers)
	}
	var sheds int64
	for a, c := range res.Answers {
		if strings.HasPrefix(a, "409") || strings.HasPrefix(a, "429") {
			sheds += c
		}
	}
	return shedCostOf(readCPU(groups).since(cpu0), n, order, sheds), nil
}

// shedCost sends n orders for the sold-out sku, 16 in flight, and returns
// each process's CPU ms per answer.
func (e *serverEnv) shedCost(s *serverSide, sku string, minter *identity.Minter, n int) (map[string]float64, error) {
	const conc = 16
	hdr := make([]http.Header, conc)
	for i := range hdr {
		tok, err := minter.Token(fmt.Sprintf("flood-%d", i), time.Hour)
		if err != nil {
			return nil, err
		}
		hdr[i] = http.Header{"Authorization": {"Bearer " + tok}}
	}
	body := []byte(`{"items":[{"sku_id":"` + sku + `","quantity":1}]}`)
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: conc}}
	groups := s.groups()
	cpu0 := readCPU(groups)
	var answered atomic.Int64
	var wg sync.WaitGroup
	for w := range conc {
		wg.Go(func() {
			for j := w; j < n; j += conc {
				a, err := jsoncall.Do(context.Background(), hc, http.MethodPost, s.api+"/api/v1/orders", body, hdr[w])
				if err == nil && (a.Status == http.StatusConflict || a.Status == http.StatusTooManyRequests) {
					answered.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if answered.Load() < int64(n)*9/10 {
		return nil, fmt.Errorf("shed cost on %s: %d of %d answered 409/429", s.name, answered.Load(), n)
	}
	out := map[string]float64{}
	for g, sec := range readCPU(groups).since(cpu0) {
		out[g] = sec * 1000 / float64(answered.Load())
	}
	return out, nil
}

func (e *serverEnv) createSKU(ctx context.Context, api, sku string, units int64) error {
	hdr := http.Header{"Authorization": {"Bearer " + e.secret["ADMIN_TOKEN"]}}
	body, _ := json.Marshal(map[string]any{"total": units, "price": 100, "buckets": 16, "per_user_limit": 1})
	for _, step := range []struct {
		method, url string
		body        []byte
	}{{http.MethodPut, api + "/api/v1/admin/skus/" + sku, body}, {http.MethodPost, api + "/api/v1/admin/skus/" + sku + "/preheat", nil}} {
		// A fresh server's search attributes reach its visibility
		// validator's cache some seconds after they are listed: a 500
		// then is retried.
		var a jsoncall.Answer
		var err error
		for try := 0; try < 60; try++ {
			if a, err = jsoncall.Do(ctx, http.DefaultClient, step.method, step.url, step.body, hdr); err != nil || a.Status < 500 {
				break
			}
			time.Sleep(time.Second)
		}
		if err != nil {
			return err
		}
		if a.Status >= 300 {
			return fmt.Errorf("%s %s: %d %s", step.method, step.url, a.Status, a.Body)
		}
	}
	return nil
}

func p99ms(lat []time.Duration) float64 {
	if len(lat) == 0 {
		return 0
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	return float64(lat[min(len(lat)-1, len(lat)*99/100)]) / float64(time.Millisecond)
}

func roundMap(m map[string]float64) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		out[k] = fmt.Sprintf("%.2f", v)
	}
	return out
}

// persistence is the server's persistence_latency histogram sums and
// counts by operation.
type persistence map[string][2]float64

func scrapePersistence(url string) persistence {
	if url == "" {
		return nil
	}
	fams, err := scrape(url)
	if err != nil {
		return nil
	}
	out := persistence{}
	// A history shard writes one at a time (history.shardIOConcurrency,
	// default 1: its IO semaphore is held across the store's write), so
	// the time a write waits for its shard's turn is charged beside the
	// writes themselves.
	for fam, rename := range map[string]string{"persistence_latency": "", "semaphore_latency": "ShardIOSemaphoreWait"} {
		f, ok := fams[fam]
		if !ok {
			continue
		}
		for _, m := range f.GetMetric() {
			op := ""
			for _, l := range m.GetLabel() {
				if l.GetName() == "operation" {
					op = l.GetValue()
				}
			}
			if rename != "" {
				if op != "ShardInfo" {
					continue
				}
				op = rename
			}
			h := m.GetHistogram()
			v := out[op]
			v[0] += h.GetSampleSum()
			v[1] += float64(h.GetSampleCount())
			out[op] = v
		}
	}
	return out
}

func (p persistence) since(before persistence) []persistOp {
	var out []persistOp
	for op, v := range p {
		n := v[1] - before[op][1]
		if n <= 0 {
			continue
		}
		out = append(out, persistOp{Op: op, Calls: n, MeanMs: (v[0] - before[op][0]) * 1000 / n})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].MeanMs*out[i].Calls > out[j].MeanMs*out[j].Calls })
	if len(out) > 8 {
		out = out[:8]
	}
	return out
}

var serverGroups = []string{"temporal", "postgres", "worker", "api", "mariadbd", "redis-server", "crowd"}

// writePersistence is a round's line of the server's store operations and
// shard IO waits, most time first.
func writePersistence(b *strings.Builder, side string, round int, ops []persistOp) {
	fmt.Fprintf(b, "\n%s round %d, persistence (most time first): ", side, round)
	for _, p := range ops {
		fmt.Fprintf(b, "%s %.0f calls %.1f ms; ", p.Op, p.Calls, p.MeanMs)
	}
	b.WriteString("\n")
}

func serversMarkdown(rounds []serverRound, units int64, buyers int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# The sale on two Temporal servers (`go run ./lab/cmd/lab bench --only servers`)\n\n")
	fmt.Fprintf(&b, "%d units, %d buyers, every winner pays; rounds interleaved dev, prod, dev, prod. dev: `temporal server start-dev` (SQLite in memory); prod: one `temporal-server` process (all services) on PostgreSQL 15, deploy/temporal config and dynamic config, 8 shards. Worker and API are processes of their own on each side; the crowd is the bench process. Box busy is the whole machine while units were being reserved; API idle the share of half-second samples then with no placement in flight at the API.\n\n", units, buyers)
	b.WriteString("| server | round | orders/s | predicted | predicted from 4 in flight | sheds/unit | all reserved s | admitted p99 ms | shed p99 ms | box busy | others' cores | API idle | paid | oversold | undersold |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rounds {
		fmt.Fprintf(&b, "| %s | %d | %.1f | %.1f | %.1f | %.1f | %.1f | %.0f | %.0f | %.0f%% | %.2f | %.0f%% | %d | %d | %d |\n", r.Server, r.Round, r.OrdersPerSec, r.Predicted, r.Predicted4, r.ShedsPerUnit,
			r.AllReservedS, r.AdmittedP99ms, r.ShedP99ms, r.BoxBusy*100, r.OthersCores, r.APIIdleShare*100, r.Paid, r.Oversold, r.Undersold)
	}
	b.WriteString("\nCPU ms per sold unit over the whole sale (payments included), then the unit costs the prediction uses: per whole order alone at the sale's callers in flight (4 x that many orders, nothing shed) and per shed answer (409 or 429, from a calibration sale of 100 units to 500 buyers, its orders charged at that order cost), then per whole order at 4 in flight (the earlier model's figure: fewer in flight, less batching in the server and PostgreSQL, more CPU per order) and per sold-out answer of a 409 flood (16 in flight). Predicted = (2 cores - others' cores) / (order + sheds per unit x shed answer), summed over the processes:\n\n| server | round | measure | " + strings.Join(serverGroups, " | ") + " |\n|---|---|---|" + strings.Repeat("---|", len(serverGroups)) + "\n")
	for _, r := range rounds {
		for _, m := range []struct {
			name string
			v    map[string]float64
		}{{"sale, per unit", r.CPUmsPerUnit}, {"order alone", r.OrderCostMs}, {"shed answer", r.ShedCostMs}, {"order alone, 4 in flight", r.OrderCost4Ms}, {"sold-out answer (409 flood)", r.SoldOutCostMs}} {
			fmt.Fprintf(&b, "| %s | %d | %s |", r.Server, r.Round, m.name)
			for _, g := range serverGroups {
				fmt.Fprintf(&b, " %.2f |", m.v[g])
			}
			b.WriteString("\n")
		}
	}
	b.WriteString("\n1,000 orders/s (10,000 units in 10 s) at each round's order cost: cores per process at 100% (= ms per order), and at u = 0.7:\n\n| server | round | " + strings.Join(serverGroups[:6], " | ") + " | total |\n|---|---|" + strings.Repeat("---|", 7) + "\n")
	for _, r := range rounds {
		fmt.Fprintf(&b, "| %s | %d |", r.Server, r.Round)
		var sum float64
		for _, g := range serverGroups[:6] {
			sum += r.OrderCostMs[g]
			fmt.Fprintf(&b, " %.1f (%.1f) |", r.OrderCostMs[g], r.OrderCostMs[g]/0.7)
		}
		fmt.Fprintf(&b, " %.1f (%.1f) |\n", sum, sum/0.7)
	}
	for _, r := range rounds {
		if r.ServerCPUTop == "" {
			continue
		}
		fmt.Fprintf(&b, "\n%s round %d, the temporal-server's CPU over the sale's first %s (sale-%d-%s-temporal-cpu.pprof; beside it each process's goroutines halfway, and the worker's and API's block and mutex profiles; the server samples neither blocks nor mutexes):\n\n```\n%s```\n",
			r.Server, r.Round, serverCPUFor, r.Round, r.Server, r.ServerCPUTop)
	}
	for _, r := range rounds {
		if len(r.ServerPersistence) == 0 {
			continue
		}
		writePersistence(&b, r.Server, r.Round, r.ServerPersistence)
	}
	return b.String()
}
