package e2e

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/flashsale/flashsale/internal/backend"
	"github.com/flashsale/flashsale/internal/ceiling"
	"github.com/flashsale/flashsale/internal/config"
	"github.com/flashsale/flashsale/internal/orderdb"
	"github.com/flashsale/flashsale/internal/orders"
	"github.com/flashsale/flashsale/internal/testenv"
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
	cfg := config.Config{
		TemporalAddress: testenv.TemporalAddress(), TemporalNamespace: "default",
		TaskQueue: "bench-" + testenv.UniqueID(b), RedisAddr: testenv.RedisAddr(),
		MySQLDSN: testenv.MySQLDSN(b), PaymentTimeout: 15 * time.Minute, WorkerConcurrency: 256,
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	ctx := context.Background()
	be, err := backend.Connect(ctx, cfg, logger)
	require.NoError(b, err)
	b.Cleanup(be.Close)
	w := be.NewWorker()
	w.RegisterWorkflow(ceiling.Workflow)
	require.NoError(b, w.Start())
	b.Cleanup(w.Stop)

	sku := "bench-" + testenv.UniqueID(b)
	inv, err := be.Orders.PutSKU(ctx, orderdb.SKU{ID: sku, Total: 10_000_000, Price: 100, Buckets: 16, PerUserLimit: 1})
	require.NoError(b, err)
	_, err = be.Stock.Preheat(ctx, sku, inv.Available, inv.Buckets)
	require.NoError(b, err)
	svc := &orders.Service{Temporal: be.Temporal, TaskQueue: cfg.TaskQueue, Orders: be.Orders}
	run := testenv.UniqueID(b)

	b.Run("ceiling", func(b *testing.B) {
		measure(b, func(i int64) error {
			id := fmt.Sprintf("ceiling-%s-%d", run, i)
			op := be.Temporal.NewWithStartWorkflowOperation(client.StartWorkflowOptions{
				ID: id, TaskQueue: cfg.TaskQueue,
				WorkflowIDConflictPolicy: enums.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
			}, ceiling.Workflow, id)
			h, err := be.Temporal.UpdateWithStartWorkflow(ctx, client.UpdateWithStartWorkflowOptions{
				StartWorkflowOperation: op,
				UpdateOptions: client.UpdateWorkflowOptions{UpdateName: ceiling.UpdateName,
					WaitForStage: client.WorkflowUpdateStageCompleted},
			})
			if err != nil {
				return err
			}
			return h.Get(ctx, nil)
		})
	})
	b.Run("order", func(b *testing.B) {
		measure(b, func(i int64) error {
			id := fmt.Sprintf("%s-%s-%d", sku, run, i)
			res, err := svc.Place(ctx, workflows.OrderInput{OrderID: id, UserID: id,
				Items: []workflows.Item{{SKU: sku, Quantity: 1}}})
			if err == nil && res.Status != workflows.StatusPendingPayment {
				err = fmt.Errorf("order %s: %s %s", id, res.Status, res.Reason)
			}
			return err
		})
	})
}

// measure runs b.N calls from 64 concurrent callers and reports
// throughput and latency percentiles of one call.
func measure(b *testing.B, call func(i int64) error) {
	const callers = 64
	var next atomic.Int64
	lat := make([]time.Duration, b.N)
	var wg sync.WaitGroup
	var firstErr atomic.Value
	b.ResetTimer()
	start := time.Now()
	for range callers {
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= int64(b.N) {
					return
				}
				t0 := time.Now()
				if err := call(i); err != nil {
					firstErr.CompareAndSwap(nil, err)
				}
				lat[i] = time.Since(t0)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	if err := firstErr.Load(); err != nil {
		b.Fatal(err)
	}
	slices.Sort(lat)
	pct := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) / 1000 }
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "orders/s")
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
}
