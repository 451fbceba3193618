package main

import (
	"context"
	"flag"
	"fmt"
	"strings"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/activities/contract"
	"github.com/flashsale/flashsale/internal/app"
	"github.com/flashsale/flashsale/internal/backend"
)

// runPreflight runs the go/no-go a sale's workflow runs just before its
// open (app.Preflight), for the SKUs named: it prints every check and
// exits 1 (NO_GO) when one fails.
func runPreflight(ctx context.Context, args []string) (any, error) {
	fs := flag.NewFlagSet("preflight", flag.ContinueOnError)
	skus := fs.String("sku", "", "the sale's SKU ids, comma-separated")
	peak := fs.Int64("expected-peak", 0, "buy requests per second expected at the peak: sizes the API instances' cores "+
		"and the buckets by docs/capacity.md (0: not checked)")
	if err := parse(fs, args); err != nil {
		return nil, err
	}
	if err := required("sku", *skus); err != nil {
		return nil, err
	}
	if *peak < 0 || *peak > 1_000_000_000 {
		return nil, usageError("--expected-peak must be between 0 and 1000000000")
	}
	return withBackend(ctx, func(b *backend.Backend) (any, error) {
		rep, err := app.Preflight(b)(ctx, contract.PreflightInput{SKUs: strings.Split(*skus, ","), ExpectedPeak: *peak})
		if err == nil && len(rep.Failed) > 0 {
			err = &flashsale.Error{Code: codeNoGo, Message: fmt.Sprintf("no go: %s failed", strings.Join(rep.Failed, ", "))}
		}
		return rep, err
	})
}
