//go:build integration

package e2e

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"testing"

	"github.com/flashsale/flashsale"
	"github.com/stretchr/testify/require"

	"github.com/flashsale/flashsale/internal/app/apptest"
	"github.com/flashsale/flashsale/internal/orders"
	"github.com/flashsale/flashsale/internal/testenv"
	"github.com/flashsale/flashsale/lab/bench"
	"github.com/flashsale/flashsale/lab/ceiling"
	"github.com/flashsale/flashsale/workflows"
)

// BenchmarkReservation measures the reservation answer through a real
// OrderWorkflow (Update-with-Start, Redis + MySQL local activities) against
// the ceiling workflow on the same server, in the same run. Compare the
// ns/op and p50/p99 of the two sub-benchmarks; the ratio is what the order's
// guarantees cost over the cheapest durable workflow.
//
//	go test -run '^$' -bench Reservation -benchtime 400x ./e2e/
func BenchmarkReservation(b *testing.B) {
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	sys := apptest.Start(b, apptest.Options{Name: "bench", WorkerConcurrency: 256, Logger: logger,
		Workflows: []any{ceiling.Workflow}})
	ctx, cfg, be := context.Background(), sys.Config, sys.Backend

	sku := benchSKU(ctx, b, sys, "bench-")
	svc := &orders.Service{Temporal: be.Temporal, TaskQueue: cfg.TaskQueue, Orders: be.Orders}
	run := testenv.UniqueID(b)

	b.Run("ceiling", func(b *testing.B) {
		report(b, bench.Ceiling(ctx, be.Temporal, cfg.TaskQueue, run, b.N, callers))
	})
	b.Run("order", func(b *testing.B) {
		report(b, bench.Measure(ctx, "reservation", b.N, callers, func(ctx context.Context, i int) error {
			id := fmt.Sprintf("%s-%s-%d", sku, run, i)
			res, err := svc.Place(ctx, workflows.OrderInput{OrderID: id, UserID: id,
				Items: []flashsale.Item{{SKU: sku, Quantity: 1}}})
			if err == nil && res.Status != flashsale.StatusPendingPayment {
				err = fmt.Errorf("order %s: %s %s", id, res.Status, res.Reason)
			}
			return err
		}))
	})
}

// callers is how many calls are in flight at once in each sub-benchmark.
const callers = 64

// report turns a bench.Stat into the benchmark's custom metrics; the
// measuring itself is lab/bench's, shared with `starter bench`.
func report(b *testing.B, s bench.Stat) {
	if s.Errors > 0 {
		b.Fatalf("%d errors, first: %s", s.Errors, s.FirstError)
	}
	b.ReportMetric(s.PerSec, "orders/s")
	b.ReportMetric(s.P50ms, "p50-ms")
	b.ReportMetric(s.P99ms, "p99-ms")
}

// benchSKU puts a SKU too large to sell out in a benchmark and preheats it
// in 16 buckets; one unit a buyer.
func benchSKU(ctx context.Context, b *testing.B, sys *apptest.System, prefix string) string {
	sku := prefix + testenv.UniqueID(b)
	inv, err := sys.Backend.Orders.PutSKU(ctx, flashsale.SKU{ID: sku, Total: 10_000_000, Price: 100, Buckets: 16, PerUserLimit: 1})
	require.NoError(b, err)
	_, err = sys.Backend.Stock.Preheat(ctx, sku, inv.Available, inv.Buckets)
	require.NoError(b, err)
	return sku
}
