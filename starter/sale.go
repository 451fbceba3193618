package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/flashsale/flashsale/internal/backend"
	"github.com/flashsale/flashsale/internal/catalog"
	"github.com/flashsale/flashsale/workflows"
)

// The fair sale commands (docs/design/fair-sale.md): the operators' controls
// of a SKU's SaleWorkflow, the same use case (catalog.Sales) the admin API
// calls. Each prints the sale as it stands after the control.

func salesOf(b *backend.Backend) catalog.Sales {
	return catalog.Sales{DB: b.Orders, Temporal: b.Temporal, TaskQueue: b.Config.TaskQueue}
}

// saleCommands are the sale subcommands: start, show and the controls.
var saleCommands = append([]string{"start", "show", "closes-at"}, catalog.SaleActions...)

func runSale(ctx context.Context, args []string) (any, error) {
	if len(args) == 0 {
		return nil, usageError("usage: starter sale " + strings.Join(saleCommands, "|") + " [flags]")
	}
	if isHelp(args[0]) {
		return nil, subcommandHelp("sale", saleCommands...)
	}
	switch {
	case args[0] == "start":
		return runSaleStart(ctx, args[1:])
	case args[0] == "show":
		return runSaleShow(ctx, args[1:])
	case args[0] == "closes-at":
		return runSaleClosesAt(ctx, args[1:])
	case slices.Contains(catalog.SaleActions, args[0]):
		return runSaleControl(ctx, args[0], args[1:])
	}
	return nil, usageError(fmt.Sprintf("unknown sale command %q: want %s", args[0], strings.Join(saleCommands, ", ")))
}

// runSaleStart starts a SKU's sale; its pre-queue opens at once and buying
// at --opens-at.
func runSaleStart(ctx context.Context, args []string) (any, error) {
	fs := flag.NewFlagSet("sale start", flag.ContinueOnError)
	sku := fs.String("sku", "", "SKU id (defined with sku create)")
	opens := fs.String("opens-at", "", "when buying starts: RFC 3339 (2026-12-24T20:00:00Z) or a delay from now (90s)")
	ttl := fs.Duration("pass-ttl", 0, "how long a pass may be spent (0: 60s)")
	maxEntrants := fs.Int64("max-entrants", 0, "the most buyers the queue takes, then QUEUE_FULL (0: 1,000,000)")
	closes := fs.String("closes-at", "", "the sale's end, RFC 3339 or a delay from now: no buy from then on, then the "+
		"sale settles, is checked, reported and removed from Redis (empty: closed by hand)")
	peak := fs.Int64("expected-peak", 0, "buy requests per second expected at the peak: the go/no-go before the open "+
		"checks the API instances' cores and the buckets against it (0: not checked)")
	if err := parse(fs, args); err != nil {
		return nil, err
	}
	if err := required("sku", *sku); err != nil {
		return nil, err
	}
	now := time.Now()
	opensAt, err := parseOpensAt(*opens, now)
	if err != nil {
		return nil, err
	}
	if *peak < 0 || *peak > 1_000_000_000 {
		return nil, usageError("--expected-peak must be between 0 and 1000000000")
	}
	var closesAt time.Time
	if *closes != "" {
		if closesAt, err = parseTime("closes-at", *closes, now); err != nil {
			return nil, err
		}
	}
	return withBackend(ctx, func(b *backend.Backend) (any, error) {
		return orNothing(salesOf(b).Start(ctx, workflows.SaleInput{SKU: *sku, OpensAt: opensAt, PassTTL: *ttl, MaxEntrants: *maxEntrants, ClosesAt: closesAt,
			ExpectedPeak: *peak}))
	})
}

// runSaleClosesAt moves a running sale's end (the closes_at Update).
func runSaleClosesAt(ctx context.Context, args []string) (any, error) {
	fs := flag.NewFlagSet("sale closes-at", flag.ContinueOnError)
	sku := fs.String("sku", "", "SKU id")
	at := fs.String("at", "", "the new end, later (extend) or sooner (shorten): RFC 3339 or a delay from now (10m)")
	reason := fs.String("reason", "", "why, for the sale's audit trail (its workflow history)")
	if err := parse(fs, args); err != nil {
		return nil, err
	}
	if err := errors.Join(required("sku", *sku), required("at", *at)); err != nil {
		return nil, usageError(err.Error())
	}
	closesAt, err := parseTime("at", *at, time.Now())
	if err != nil {
		return nil, err
	}
	return withBackend(ctx, func(b *backend.Backend) (any, error) {
		return orNothing(salesOf(b).MoveEnd(ctx, *sku, closesAt, *reason))
	})
}

// parseOpensAt reads --opens-at: a time, or a delay from now.
func parseOpensAt(v string, now time.Time) (time.Time, error) {
	if v == "" {
		return time.Time{}, usageError("--opens-at is required")
	}
	return parseTime("opens-at", v, now)
}

// parseTime reads a time flag: RFC 3339, or a delay from now.
func parseTime(name, v string, now time.Time) (time.Time, error) {
	if d, err := time.ParseDuration(v); err == nil {
		return now.Add(d), nil
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return time.Time{}, usageError(fmt.Sprintf("--%s %q: want RFC 3339 or a duration", name, v))
	}
	return t, nil
}

func runSaleShow(ctx context.Context, args []string) (any, error) {
	fs := flag.NewFlagSet("sale show", flag.ContinueOnError)
	sku := fs.String("sku", "", "SKU id")
	if err := parse(fs, args); err != nil {
		return nil, err
	}
	if err := required("sku", *sku); err != nil {
		return nil, err
	}
	return withBackend(ctx, func(b *backend.Backend) (any, error) {
		return orNothing(salesOf(b).View(ctx, *sku))
	})
}

// runSaleControl sends open, pause, resume or close to a SKU's sale.
func runSaleControl(ctx context.Context, action string, args []string) (any, error) {
	fs := flag.NewFlagSet("sale "+action, flag.ContinueOnError)
	sku := fs.String("sku", "", "SKU id")
	reason := fs.String("reason", "", "why, for the sale's audit trail (its workflow history)")
	if err := parse(fs, args); err != nil {
		return nil, err
	}
	if err := required("sku", *sku); err != nil {
		return nil, err
	}
	return withBackend(ctx, func(b *backend.Backend) (any, error) {
		return orNothing(salesOf(b).Control(ctx, *sku, action, *reason))
	})
}
