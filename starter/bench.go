//go:build !nodemo

package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/flashsale/flashsale/internal/bench"
	"github.com/flashsale/flashsale/internal/config"
	"github.com/flashsale/flashsale/internal/demo"
	"github.com/flashsale/flashsale/internal/orderdb"
	"github.com/flashsale/flashsale/workflows"
)

// benchResult prints the Markdown table for a person.
type benchResult struct{ report *bench.Report }

func (b benchResult) Text() (string, bool)         { return b.report.Markdown(), true }
func (b benchResult) MarshalJSON() ([]byte, error) { return json.Marshal(b.report) }

// runBench measures every hot path beside its ceiling in one run, against
// the real Redis and MySQL of the environment and Temporal dev servers it
// starts itself (one in memory, one on a SQLite file), and writes
// results.json, results.md and sale.png to --out.
func runBench(ctx context.Context, args []string) (any, error) {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	out := fs.String("out", "docs/bench", "directory for results.json, results.md and sale.png")
	conc := fs.Int("concurrency", 64, "callers in flight for every path")
	httpOps := fs.Int("http-ops", 20000, "requests for the HTTP paths")
	redisOps := fs.Int("redis-ops", 20000, "calls for the Redis paths")
	mysqlOps := fs.Int("mysql-ops", 3000, "orders for the MySQL hot-row baseline")
	orderOps := fs.Int("orders", 300, "whole orders per Temporal server")
	units := fs.Int64("sale-units", 1000, "units in the flash sale")
	buyers := fs.Int("sale-buyers", 5000, "buyers in the flash sale")
	if err := parse(fs, args); err != nil {
		return nil, err
	}
	cfg, err := config.Load()
	if err != nil {
		return nil, invalid("%v", err)
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return nil, err
	}
	// Its own database, so a bench run never touches a sale's data.
	dsn, err := mysql.ParseDSN(cfg.MySQLDSN)
	if err != nil {
		return nil, invalid("MYSQL_DSN: %v", err)
	}
	dsn.DBName = "flashsale_bench"
	cfg.MySQLDSN = dsn.FormatDSN()
	run := time.Now().UTC().Format("150405")
	logf := func(format string, a ...any) { fmt.Fprintf(os.Stderr, "bench: "+format+"\n", a...) }
	r := bench.NewReport()
	r.Notes = append(r.Notes,
		"Every path is measured with the same client code and the same number of callers in flight; compare ratios, not absolute numbers.",
		"The demo (`go run ./starter demo`) uses the in-memory dev server.")

	for i, server := range []struct{ name, dbFile string }{
		{"dev server in memory", ""},
		{"dev server on a SQLite file (WAL)", filepath.Join(os.TempDir(), "flashsale-bench-"+run+".db")},
	} {
		c := cfg
		c.TemporalAddress = "" // start our own, so its CPU can be measured
		c.TaskQueue = "bench-" + run
		c.PaymentTimeout = 15 * time.Minute
		logf("starting %s", server.name)
		st, err := demo.StartStack(ctx, demo.StackOptions{Config: c, TemporalDBFile: server.dbFile, Progress: os.Stderr})
		if err != nil {
			return nil, err
		}
		whole, err := benchTemporal(ctx, r, st, server.name, run+fmt.Sprint(i), *orderOps, *conc, logf)
		if err == nil && i == 0 {
			err = benchEdges(ctx, r, st, whole, run, *httpOps, *redisOps, *mysqlOps, *conc, logf)
			if err == nil {
				err = benchSale(ctx, r, st, run, *units, *buyers, *conc, logf)
			}
		}
		st.Close()
		if server.dbFile != "" {
			_ = os.Remove(server.dbFile)
		}
		if err != nil {
			return nil, err
		}
	}

	if err := r.WriteJSON(filepath.Join(*out, "results.json")); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(*out, "results.md"), []byte(r.Markdown()), 0o644); err != nil {
		return nil, err
	}
	if r.Sale != nil {
		if err := r.Sale.WriteChart(filepath.Join(*out, "sale.png")); err != nil {
			return nil, err
		}
	}
	logf("wrote %s/results.json, results.md, sale.png", *out)
	return benchResult{report: r}, nil
}

// benchTemporal measures whole orders and the reservation answer against the
// ceiling workflow on one server, and what one order costs that server. It
// returns the whole orders' Stat for the MySQL baseline to be compared with.
func benchTemporal(ctx context.Context, r *bench.Report, st *demo.Stack, server, run string, n, conc int, logf func(string, ...any)) (bench.Stat, error) {
	b := st.Backend
	sku := "bench-orders-" + run
	if _, err := b.Orders.PutSKU(ctx, orderdb.SKU{ID: sku, Total: int64(n) * 2, Price: 100, Buckets: 16, PerUserLimit: 1}); err != nil {
		return bench.Stat{}, err
	}
	if _, err := b.Stock.Preheat(ctx, sku, int64(n)*2, 16); err != nil {
		return bench.Stat{}, err
	}
	svc := orderService(b)

	// One caller first: the answer's latency without queueing, which is
	// what a buyer sees when the server is not saturated.
	const idle = 50
	logf("%s: %d ceiling workflows and %d orders, one caller", server, idle, idle)
	ceilIdle := bench.Ceiling(ctx, b.Temporal, b.Config.TaskQueue, run+"-idle", idle, 1)
	ceilIdle.Name += ", one caller"
	reserveIdle, _ := bench.Orders(ctx, svc, sku, 100, run+"-idle", idle, 1)
	reserveIdle.Name += ", one caller"
	r.Comparisons = append(r.Comparisons,
		bench.Compare("temporal: "+server, reserveIdle, ceilIdle, "reservation answer vs the cheapest Update-with-Start, unloaded"))

	logf("%s: %d ceiling workflows", server, n)
	cpu0 := serverCPU(st)
	ceil := bench.Ceiling(ctx, b.Temporal, b.Config.TaskQueue, run, n, conc)
	cpu1 := serverCPU(st)
	logf("%s: %d whole orders", server, n)
	reserve, whole := bench.Orders(ctx, svc, sku, 100, run, n, conc)
	cpu2 := serverCPU(st)
	if whole.Errors > 0 || ceil.Errors > 0 {
		return bench.Stat{}, fmt.Errorf("bench %s: errors: orders %d (%s), ceiling %d (%s)", server, whole.Errors, whole.FirstError, ceil.Errors, ceil.FirstError)
	}
	r.Comparisons = append(r.Comparisons,
		bench.Compare("temporal: "+server, reserve, ceil, "reservation answer vs the cheapest Update-with-Start"),
		bench.Compare("temporal: "+server, whole, ceil, "whole order vs the cheapest Update-with-Start"))

	orderEvents, err := bench.HistoryEvents(ctx, b.Temporal, workflows.OrderWorkflowID(fmt.Sprintf("%s-%s-0", sku, run)))
	if err != nil {
		return bench.Stat{}, err
	}
	ceilEvents, err := bench.HistoryEvents(ctx, b.Temporal, fmt.Sprintf("ceiling-%s-0", run))
	if err != nil {
		return bench.Stat{}, err
	}
	r.Costs = append(r.Costs, bench.CostPerOrder{
		Server: server, HistoryEvents: orderEvents, CeilingEvents: ceilEvents,
		// Update-with-Start for the answer, the pay update for the money.
		ClientRPCs:     2,
		ServerCPUms:    float64((cpu2 - cpu1).Milliseconds()) / float64(whole.Ops),
		CeilingCPUms:   float64((cpu1 - cpu0).Milliseconds()) / float64(ceil.Ops),
		MeasuredOrders: whole.Ops,
	})
	return whole, nil
}

func serverCPU(st *demo.Stack) time.Duration {
	if st.TemporalPID == 0 {
		return 0
	}
	d, err := bench.ProcessCPU(st.TemporalPID)
	if err != nil {
		return 0
	}
	return d
}

// benchEdges measures the sold-out path through HTTP against a hello-world
// handler, the Redis deduct against raw EVALSHA, and the MySQL hot-row
// baseline, which it compares with whole, the durable orders'.
func benchEdges(ctx context.Context, r *bench.Report, st *demo.Stack, whole bench.Stat, run string, httpOps, redisOps, mysqlOps, conc int, logf func(string, ...any)) error {
	hc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: conc, MaxConnsPerHost: conc}}

	soldOut := "bench-soldout-" + run
	if err := st.CreateSKU(ctx, soldOut, 0, 100, 16); err != nil {
		return err
	}
	body := func(i int) []byte {
		return fmt.Appendf(nil, `{"order_id":"so-%s-%d","items":[{"sku_id":%q,"quantity":1}]}`, run, i, soldOut)
	}
	// Many buyers, each with a token minted before the clock starts, as
	// a crowd logged in before the sale would be; the hello-world ceiling
	// gets the same headers.
	tokens := make([]http.Header, 256)
	for i := range tokens {
		tok, err := st.Buyers.Token(fmt.Sprintf("u-%d", i), time.Hour)
		if err != nil {
			return err
		}
		tokens[i] = http.Header{"Authorization": {"Bearer " + tok}}
	}
	header := func(i int) http.Header { return tokens[i%len(tokens)].Clone() }
	logf("HTTP: %d sold-out requests vs hello world", httpOps)
	// Warm: the first buyer learns "sold out", every later one is shed.
	_ = bench.HTTP(ctx, "warm", hc, st.URL+"/api/v1/orders", body, header, http.StatusConflict, 10, 1)
	sold := bench.HTTP(ctx, "sold-out rejection via the API", hc, st.URL+"/api/v1/orders", body, header, http.StatusConflict, httpOps, conc)
	hello := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		_, _ = w.Write([]byte("hello"))
	}))
	defer hello.Close()
	hw := bench.HTTP(ctx, "hello-world handler (ceiling)", hc, hello.URL, body, header, http.StatusOK, httpOps, conc)
	if sold.Errors > 0 {
		return fmt.Errorf("sold-out path: %d errors: %s", sold.Errors, sold.FirstError)
	}
	r.Comparisons = append(r.Comparisons, bench.Compare("http sold-out path", sold, hw, ""))

	logf("Redis: %d reservations with 1 and 16 buckets vs raw EVALSHA", redisOps)
	raw, err := bench.RedisRawTake(ctx, st.Backend.Stock, run, redisOps, conc)
	if err != nil {
		return err
	}
	for _, buckets := range []int{1, 16} {
		s, err := bench.RedisReserve(ctx, st.Backend.Stock, run, buckets, redisOps, conc)
		if err != nil {
			return err
		}
		r.Comparisons = append(r.Comparisons, bench.Compare("redis deduct", s, raw, ""))
	}

	logf("MySQL: %d hot-row orders", mysqlOps)
	db, err := sql.Open("mysql", st.Backend.Config.MySQLDSN)
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(conc)
	hot, err := bench.MySQLHotRow(ctx, db, run, mysqlOps, conc)
	if err != nil {
		return err
	}
	// The baseline row is set against the whole durable order: it is what
	// the whole design replaces.
	r.Comparisons = append(r.Comparisons, bench.Compare("baseline without Redis and Temporal", whole, hot,
		"whole durable order vs SELECT FOR UPDATE + UPDATE on one hot row"))
	return nil
}

// benchSale runs a flash sale through the HTTP API where every winner pays.
func benchSale(ctx context.Context, r *bench.Report, st *demo.Stack, run string, units int64, buyers, conc int, logf func(string, ...any)) error {
	logf("flash sale: %d units, %d buyers", units, buyers)
	s, err := st.Sale(ctx, demo.SaleOptions{
		SKU: "bench-sale-" + run, Units: units, Price: 100, Buckets: 16, Buyers: buyers, Concurrency: conc,
		PayShare: 1, PaymentTimeout: 15 * time.Minute, DuplicateClickShare: 0.05, Progress: os.Stderr, Seed: 1,
	})
	if err != nil {
		return err
	}
	sale := &bench.Sale{
		Units: units, Buyers: buyers, Requests: s.Requests, Answers: s.Answers, WorkflowsStarted: s.WorkflowsStarted,
		Reserved: s.Reserved, Sold: s.Sold, Oversold: s.Oversold, Undersold: s.Undersold,
		TimeToReserveAll: s.TimeToReserveAll.Seconds(),
		Decision:         bench.Summarize("buy decision", s.Load.Latencies, s.Elapsed),
		Histogram:        bench.LatencyHistogram(s.Load.Latencies),
	}
	for _, p := range s.Load.Timeline {
		sale.Timeline = append(sale.Timeline, bench.Point{Seconds: p.At.Seconds(), Reserved: p.Reserved, Left: units - p.Reserved})
	}
	r.Sale = sale
	return nil
}
