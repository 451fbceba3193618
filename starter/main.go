// Command starter is the flashsale CLI for operators, demos and load runs.
// Every subcommand prints one JSON object on stdout; errors are a JSON
// object {"code","message"} on stderr with a non-zero exit status: 2 for a
// command line it cannot run, 3 for UNAVAILABLE (Redis, MySQL or Temporal
// did not answer; retry as it is), 1 for any other failure.
//
//	starter migrate
//	starter sku create --sku ID --stock N --price MINOR [--buckets N] [--limit N]
//	starter sku preheat --sku ID
//	starter stock --sku ID
//	starter restock --sku ID --qty N [--restock-id ID]
//	starter buckets --sku ID --buckets N
//	starter order --user U --sku ID [--qty N] [--client-order-id KEY | --order-id ID]
//	starter pay --order ID --txn T --amount MINOR [--via-api URL [--status SUCCESS|FAILED]]
//	starter cancel --order ID
//	starter status --order ID
//	starter token --user U [--ttl 1h]
//	starter demo [--units N --buyers N ...]   (prints a table for a person)
//	starter --help, starter CMD --help         (usage on stdout, exit 0)
//	starter --version                          (the build, internal/buildinfo)
//
// Configuration comes from the same environment variables as the worker.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/flashsale/flashsale/internal/backend"
	"github.com/flashsale/flashsale/internal/buildinfo"
)

// command is one subcommand. run parses args and returns the JSON-able
// result.
type command struct {
	name  string
	usage string
	run   func(ctx context.Context, args []string) (any, error)
}

func commands() []command {
	return []command{
		{"migrate", "apply the database migrations", runMigrate},
		{"sku", "sku create|preheat|close: set up a SKU before a sale; close ends one sold without a queue", runSKU},
		{"stock", "show a SKU's stock in Redis and MySQL", runStock},
		{"restock", "add units to a SKU mid-sale (idempotent by --restock-id)", runRestock},
		{"buckets", "change a SKU's Redis bucket count mid-sale", runBuckets},
		{"order", "place an order and print the reservation answer", runOrder},
		{"pay", "pay an order", runPay},
		{"cancel", "cancel an unpaid order", runCancel},
		{"status", "show an order", runStatus},
		{"orders", "list a buyer's orders by --user (found by the hash of the id kept in Temporal)", runOrders},
		{"token", "print a buyer token for --user (BUYER_JWT_SECRET), for the HTTP API", runToken},
		{"refund", "refund order|mark: refund one paid order; mark money owed back as sent", runRefund},
		{"preflight", "the go/no-go before a sale opens (Redis = MySQL, reconcile Schedule, workers, search attributes, " +
			"no eviction, capacity); exits 1 on any failing check", runPreflight},
		{"check", "check the sale's invariants (MySQL, Redis, Temporal); exits 1 on any violation", runCheck},
		{"reconcile", "reconcile schedule|now: bring Redis stock in step with MySQL", runReconcile},
		{"sale", "sale start|show|closes-at|open|pause|resume|close|void: a SKU's fair sale (queue, passes, scheduled open and end)", runSale},
		{"campaign", "campaign start|show|open|pause|resume|close|void: several SKUs at flash prices from allocations, " +
			"one opens_at and closes_at, controlled together", runCampaign},
		{"demo", "run a whole flash sale in this process (embedded services unless the env names real ones)", runDemo},
	}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	// Logs go to stderr as JSON so stdout stays one parseable object.
	slog.SetDefault(slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	backend.SetRedisLogger(slog.Default())
	if len(args) == 0 {
		writeError(stderr, usageError(usageText()))
		return 2
	}
	if isHelp(args[0]) {
		fmt.Fprintln(stdout, usageText())
		return 0
	}
	if args[0] == "--version" || args[0] == "-version" {
		if err := buildinfo.Read().Print(stdout, "starter"); err != nil {
			return 1
		}
		return 0
	}
	for _, c := range commands() {
		if c.name != args[0] {
			continue
		}
		out, err := c.run(ctx, args[1:])
		if showHelp(err, func(text string) { fmt.Fprint(stdout, text) }) {
			return 0
		}
		if err != nil {
			// A command may fail with a result worth reading (the checker's
			// report): it goes to stdout, the error to stderr.
			if out != nil {
				_ = json.NewEncoder(stdout).Encode(out)
			}
			writeError(stderr, err)
			return exitCode(err)
		}
		if t, ok := out.(texter); ok {
			if text, human := t.Text(); human {
				fmt.Fprint(stdout, text)
				return 0
			}
		}
		enc := json.NewEncoder(stdout)
		if err := enc.Encode(out); err != nil {
			writeError(stderr, fmt.Errorf("write output: %w", err))
			return 1
		}
		return 0
	}
	writeError(stderr, usageError(fmt.Sprintf("unknown command %q\n%s", args[0], usageText())))
	return 2
}

// texter is a result meant for a person (the demo's table); it may still
// choose JSON, e.g. when asked with --json.
type texter interface {
	Text() (text string, human bool)
}

func usageText() string {
	s := "usage: starter <command> [flags]\ncommands:"
	for _, c := range commands() {
		s += fmt.Sprintf("\n  %-9s %s", c.name, c.usage)
	}
	return s + "\n\nstarter CMD --help prints a command's flags; starter --version the build.\n\n" + exitHelp + "\n\n" + strings.TrimRight(backend.EnvHelp, "\n")
}
