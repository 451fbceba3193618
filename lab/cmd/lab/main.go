// Command lab runs the lab's benchmark: every hot path beside its ceiling
// or baseline in interleaved rounds, the order paths' server cost, the dev
// server settings' A/B, the flash sale, settlement and fairness sections.
// It writes lab/results (results.json, results.md, sale.png) and the
// generated tables of lab/README.md, from the checkout's root:
//
//	go run ./lab/cmd/lab bench [flags]     # lab bench -h lists them
//	go run ./lab/cmd/lab entrants [flags]  # a fair sale's open at 1,000,000 entrants
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/internal/backend"
	"github.com/flashsale/flashsale/internal/orders"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	slog.SetDefault(slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if len(args) > 0 && args[0] == "entrants" {
		if err := runEntrants(ctx, args[1:], stdout); err != nil && !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(stderr, "lab entrants: %v\n", err)
			return 1
		}
		return 0
	}
	if len(args) == 0 || args[0] != "bench" {
		fmt.Fprintln(stderr, "usage: lab bench [flags] | lab entrants [flags]   (-h lists the flags)")
		return 2
	}
	res, err := runBench(ctx, args[1:])
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "lab bench: %v\n", err)
		return 1
	}
	text, _ := res.Text()
	fmt.Fprint(stdout, text)
	return 0
}

// parse parses a command's flags, printing their usage on -h.
func parse(fs *flag.FlagSet, args []string) error {
	fs.SetOutput(os.Stderr)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%s: unexpected arguments %v", fs.Name(), fs.Args())
	}
	return nil
}

func invalid(format string, args ...any) error {
	return flashsale.Errorf(flashsale.Invalid, format, args...)
}

func orderService(b *backend.Backend) *orders.Service {
	return &orders.Service{Temporal: b.Temporal, TaskQueue: b.Config.TaskQueue, Orders: b.Orders, UserIDKey: b.Config.UserIDKey}
}
