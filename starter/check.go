package main

import (
	"context"
	"flag"

	"github.com/flashsale/flashsale/internal/audit"
)

// runCheck runs the invariant checker. A report with violations is returned
// together with an error: run prints the report on stdout and exits 1.
func runCheck(ctx context.Context, args []string) (any, error) {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	sku := fs.String("sku", "", "check only this SKU (default: every SKU)")
	grace := fs.Duration("grace", audit.DefaultGrace, "how long past its pay_by an order may still be open")
	if err := parse(fs, args); err != nil {
		return nil, err
	}
	if *grace < 0 {
		return nil, usageError("--grace must not be negative")
	}
	b, err := connect(ctx)
	if err != nil {
		return nil, err
	}
	defer b.Close()
	rep, err := audit.Check(ctx, audit.Deps{Stock: b.Stock, Orders: b.Orders, Temporal: b.Temporal, Grace: *grace}, *sku)
	if err != nil {
		return nil, err
	}
	if rep.OK {
		return rep, nil
	}
	// The report itself is still printed on stdout, so a script gets both
	// the exit status and the details.
	return rep, violations(len(rep.Violations))
}
