package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/flashsale/flashsale/internal/config"
	"github.com/flashsale/flashsale/internal/demo"
)

// demoResult prints the summary table for a person, or JSON with --json.
type demoResult struct {
	summary demo.Summary
	asJSON  bool
}

func (d demoResult) Text() (string, bool) { return d.summary.Table(), !d.asJSON }

func (d demoResult) MarshalJSON() ([]byte, error) { return json.Marshal(d.summary) }

// runDemo runs a whole flash sale in this process. Services the environment
// does not name (TEMPORAL_ADDRESS, REDIS_ADDR, MYSQL_DSN) are started
// embedded, so it works on a machine with nothing but Go.
func runDemo(ctx context.Context, args []string) (any, error) {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	units := fs.Int64("units", 100, "units on sale")
	buyers := fs.Int("buyers", 2000, "buyers (distinct users)")
	conc := fs.Int("concurrency", 64, "buy requests in flight")
	buckets := fs.Int("buckets", 16, "Redis buckets")
	price := fs.Int64("price", 129900, "unit price in minor units")
	timeout := fs.Duration("payment-timeout", 30*time.Second, "time a winner has to pay")
	pay := fs.Float64("pay", 0.6, "share of first-round winners who pay")
	cancel := fs.Float64("cancel", 0.15, "share of first-round winners who cancel (the rest let the timeout run out)")
	dup := fs.Float64("duplicate-clicks", 0.1, "share of buyers who click twice")
	queue := fs.Bool("queue", false, "sell through a fair queue: buyers enter a pre-queue, are ranked by a committed seed at the open and buy with passes (docs/design/fair-sale.md)")
	opensIn := fs.Duration("opens-in", 5*time.Second, "with --queue or --campaign: how long the pre-queue is open before buying starts")
	campaign := fs.Int("campaign", 0, "sell a campaign of this many SKUs (--units each): half of each carved at half the price, "+
		"every item's fair sale opening and closing together, what is left going back (docs/sale-day.md, Campaigns)")
	keep := fs.Bool("keep", false, "keep everything running after the sale, to browse the sale page and the Web UI (Ctrl-C ends)")
	temporalDB := fs.String("temporal-db", "", "keep the embedded Temporal's history in this SQLite file")
	asJSON := fs.Bool("json", false, "print the summary as JSON instead of a table")
	if err := parse(fs, args); err != nil {
		return nil, err
	}
	if *units < 1 || *buyers < 1 || *conc < 1 || *timeout <= 0 || *pay < 0 || *cancel < 0 || *pay+*cancel > 1 || *opensIn < 0 ||
		*campaign < 0 || *campaign > 200 {
		return nil, usageError("demo: units, buyers, concurrency and payment-timeout must be positive; pay+cancel at most 1; campaign 0-200")
	}
	cfg, err := config.Load()
	if err != nil {
		return nil, invalid("%v", err)
	}
	cfg = demo.Embedded(cfg, os.Getenv)
	cfg.PaymentTimeout = *timeout
	cfg.TaskQueue = "demo-" + time.Now().UTC().Format("20060102-150405")

	progress := os.Stderr
	fmt.Fprintln(progress, "flashsale demo: setting up (first run builds the Temporal server from the Go module proxy: ~3 minutes)")
	st, err := demo.StartStack(ctx, demo.StackOptions{Config: cfg, TemporalDBFile: *temporalDB, Progress: progress, API: demo.DemoAPI})
	if err != nil {
		return nil, err
	}
	defer st.Close()
	sku := "demo-" + time.Now().UTC().Format("150405")
	fmt.Fprintf(progress, "sale of %d units of %s to %d buyers; winners have %s to pay; API %s\n", *units, sku, *buyers, *timeout, st.URL)
	fmt.Fprintf(progress, "live sale page: %s\n", st.SalePageURL(sku))
	if st.UIURL != "" {
		fmt.Fprintf(progress, "Temporal Web UI: %s\n", st.UIURL)
	}
	o := demo.SaleOptions{
		SKU: sku, Units: *units, Price: *price, Buckets: *buckets, Buyers: *buyers, Concurrency: *conc,
		PayShare: *pay, CancelShare: *cancel, DuplicateClickShare: *dup, PaymentTimeout: *timeout,
		Progress: progress, Seed: uint64(time.Now().UnixNano()), OpensIn: *opensIn,
	}
	sell := st.Sale
	switch {
	case *campaign > 0:
		sell = func(ctx context.Context, o demo.SaleOptions) (demo.Summary, error) {
			return st.CampaignSale(ctx, o, *campaign)
		}
	case *queue:
		sell = st.QueuedSale
	}
	s, err := sell(ctx, o)
	if err != nil {
		return nil, err
	}
	if *keep {
		fmt.Fprintln(os.Stdout, s.Table())
		fmt.Fprintln(progress, "--keep: everything stays up; Ctrl-C to stop")
		<-ctx.Done()
		return demoResult{summary: s, asJSON: true}, nil
	}
	return demoResult{summary: s, asJSON: *asJSON}, nil
}
