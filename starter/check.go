package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/flashsale/flashsale/internal/audit"
)

// codeViolated is the error code of a check that found violations. The
// report itself is still printed on stdout, so a script gets both the exit
// status and the details.
const codeViolated = "INVARIANT_VIOLATED"

// failedReportOut receives the report of a failed check. run prints a
// command's result only on success and hands commands no writer, so check
// prints this one itself; tests point it at a buffer.
var failedReportOut io.Writer = os.Stdout

func runCheck(ctx context.Context, args []string) (any, error) {
	return check(ctx, args, failedReportOut)
}

// check runs the invariant checker. A clean report is returned for run to
// print; a report with violations is printed here and turned into an error,
// because run prints results only on success and must exit non-zero.
func check(ctx context.Context, args []string, stdout io.Writer) (any, error) {
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
	if err := json.NewEncoder(stdout).Encode(rep); err != nil {
		return nil, fmt.Errorf("write report: %w", err)
	}
	return nil, &cliError{Code: codeViolated, Message: fmt.Sprintf("%d invariant violations", len(rep.Violations))}
}
