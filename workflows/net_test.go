//go:build integration

package workflows_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/internal/app"
	"github.com/flashsale/flashsale/internal/app/apptest"
	"github.com/flashsale/flashsale/internal/audit"
	"github.com/flashsale/flashsale/internal/orders"
	"github.com/flashsale/flashsale/workflows"
)

// TestNetClosesOrdersWhoseWorkflowIsGone runs a sale on the real stack in
// which 50 orders are terminated from under their workflow and 5 others
// run on a worker whose code no longer replays their history (a
// deliberate non-determinism: their workflow tasks fail from the deadline
// on), and 2 of a SKU that deducts at payment holding bookings, terminated
// too. One reconcile run closes the 52 through CloseOrder and ReleaseStock
// (the bookings back),
// every unit is back in MySQL and Redis, the sale is settled (nothing
// frozen, no order running: what a fair sale's close waits for) and the
// checker finds it clean; the 5 are reported stuck by id and stay on the
// overdue gauge's list. A second run closes nothing more.
func TestNetClosesOrdersWhoseWorkflowIsGone(t *testing.T) {
	ctx := context.Background()
	sys := apptest.Start(t, apptest.Options{Name: "net", WorkerConcurrency: 32})
	svc := &orders.Service{Temporal: sys.Temporal, TaskQueue: sys.Config.TaskQueue, Orders: sys.Orders}
	sku, stuckSKU := sys.ID+"-net", sys.ID+"-net-stuck"
	for id, units := range map[string]int64{sku: 60, stuckSKU: 5} {
		_, err := sys.Orders.PutSKU(ctx, flashsale.SKU{ID: id, Total: units, Price: 700, Buckets: 4, PerUserLimit: 1})
		require.NoError(t, err)
		_, err = sys.Stock.Preheat(ctx, id, units, 4)
		require.NoError(t, err)
	}
	tryPlace := func(svc *orders.Service, name, sku string, timeout time.Duration) (string, error) {
		id := sys.ID + "-" + name
		res, err := svc.Place(ctx, workflows.OrderInput{OrderID: id, UserID: "u-" + name,
			PaymentTimeout: timeout, Items: []flashsale.Item{{SKU: sku, Quantity: 1}}})
		if err == nil && res.Status != flashsale.StatusPendingPayment {
			err = fmt.Errorf("order %s: %s %s", name, res.Status, res.Reason)
		}
		return id, err
	}
	place := func(svc *orders.Service, name, sku string, timeout time.Duration) string {
		id, err := tryPlace(svc, name, sku, timeout)
		require.NoError(t, err)
		return id
	}

	// The stuck five: placed on a worker of their own task queue, which
	// then gives way to one registering other code as OrderWorkflow.
	stuckCfg := sys.Config
	stuckCfg.TaskQueue += "-stuck"
	stuckB := sys.Connect(stuckCfg, nil)
	good := app.NewWorker(stuckB)
	require.NoError(t, good.Start())
	stuckSvc := &orders.Service{Temporal: stuckB.Temporal, TaskQueue: stuckCfg.TaskQueue, Orders: sys.Orders}
	var stuck []string
	for i := range 5 {
		stuck = append(stuck, place(stuckSvc, fmt.Sprintf("stuck-%d", i), stuckSKU, 3*time.Second))
	}
	good.Stop()
	broken := worker.New(stuckB.Temporal, stuckCfg.TaskQueue, worker.Options{})
	broken.RegisterWorkflowWithOptions(func(ctx workflow.Context, _ workflows.OrderInput) error {
		return workflow.Sleep(ctx, time.Hour) // not what the history recorded
	}, workflow.RegisterOptions{Name: "OrderWorkflow"})
	require.NoError(t, broken.Start())
	t.Cleanup(broken.Stop)

	// The sale: 50 orders terminated mid-sale, 3 paid, 2 expired by their
	// own timer.
	var terminated []string
	var errs []error
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Go(func() {
			id, err := tryPlace(svc, fmt.Sprintf("gone-%d", i), sku, 8*time.Second)
			if err == nil {
				err = sys.Temporal.TerminateWorkflow(ctx, workflows.OrderWorkflowID(id), "", "operator pressed Terminate")
			}
			mu.Lock()
			defer mu.Unlock()
			terminated = append(terminated, id)
			errs = append(errs, err)
		})
	}
	wg.Wait()
	require.NoError(t, errors.Join(errs...))
	for i := range 3 {
		id := place(svc, fmt.Sprintf("paid-%d", i), sku, 0)
		_, err := svc.Pay(ctx, id, workflows.Payment{TransactionID: "tx-" + id, Amount: 700, ReceivedAt: time.Now()})
		require.NoError(t, err)
	}
	for i := range 2 {
		id := place(svc, fmt.Sprintf("expired-%d", i), sku, time.Second)
		require.NoError(t, sys.Temporal.GetWorkflow(ctx, workflows.OrderWorkflowID(id), "").Get(ctx, nil))
	}
	inv, err := sys.Orders.Inventory(ctx, sku)
	require.NoError(t, err)
	require.Equal(t, [3]int64{7, 50, 3}, [3]int64{inv.Available, inv.Frozen, inv.Sold}, "the terminated orders hold their units")

	// A SKU that deducts at payment: two terminated orders hold bookings.
	booked := sys.ID + "-net-booked"
	_, err = sys.Orders.PutSKU(ctx, flashsale.SKU{ID: booked, Total: 2, Price: 700, Buckets: 2, PerUserLimit: 1,
		Terms: flashsale.Terms{Deduct: flashsale.DeductPayment}})
	require.NoError(t, err)
	_, err = sys.Stock.Preheat(ctx, booked, 2, 2)
	require.NoError(t, err)
	require.NoError(t, sys.Stock.SetBookings(ctx, booked, 6))
	for i := range 2 {
		id := place(svc, fmt.Sprintf("booked-%d", i), booked, 8*time.Second)
		require.NoError(t, sys.Temporal.TerminateWorkflow(ctx, workflows.OrderWorkflowID(id), "", "operator pressed Terminate"))
		terminated = append(terminated, id)
	}
	bookingsLeft := func() string {
		v, err := sys.Redis.Get(ctx, "fs:{sku:"+booked+"}:bookings").Result()
		require.NoError(t, err)
		return v
	}
	require.Equal(t, "4", bookingsLeft())

	// Past every deadline, and the stuck five's tasks failing.
	latest := time.Time{}
	for _, id := range append(slices.Clone(terminated), stuck...) {
		o, err := sys.Orders.Order(ctx, id)
		require.NoError(t, err)
		if o.PayBy.After(latest) {
			latest = o.PayBy
		}
	}
	time.Sleep(time.Until(latest.Add(1500 * time.Millisecond)))
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		for _, id := range stuck {
			d, err := sys.Temporal.DescribeWorkflow(ctx, workflows.OrderWorkflowID(id), "")
			require.NoError(c, err)
			require.Greater(c, d.RawResponse.GetPendingWorkflowTask().GetAttempt(), int32(1), id)
		}
	}, 30*time.Second, 200*time.Millisecond)

	reconcile := func() workflows.ReconcileResult {
		run, err := sys.Temporal.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
			ID: "reconcile-" + sys.ID + "-" + fmt.Sprint(time.Now().UnixNano()), TaskQueue: sys.Config.TaskQueue,
		}, workflows.ReconcileWorkflow, workflows.ReconcileInput{Settle: time.Second, OverdueGrace: time.Second})
		require.NoError(t, err)
		var res workflows.ReconcileResult
		require.NoError(t, run.Get(ctx, &res))
		require.NotNil(t, res.Net)
		require.Empty(t, res.Net.Error)
		return res
	}
	first := reconcile()
	require.ElementsMatch(t, terminated, first.Net.Closed)
	require.Equal(t, "6", bookingsLeft(), "the terminated deferred orders' bookings are back")
	require.ElementsMatch(t, stuck, first.Net.Stuck)
	require.Empty(t, first.Net.Paid)
	require.Equal(t, int64(50), first.Net.Released)

	inv, err = sys.Orders.Inventory(ctx, sku)
	require.NoError(t, err)
	require.Equal(t, [3]int64{57, 0, 3}, [3]int64{inv.Available, inv.Frozen, inv.Sold}, "every terminated order's unit is back")
	for _, id := range terminated[:3] {
		o, err := sys.Orders.Order(ctx, id)
		require.NoError(t, err)
		require.Equal(t, flashsale.StatusExpired, o.Status)
		require.Equal(t, string(flashsale.PaymentTimeout), o.Reason)
	}
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		// Visibility lags the paid and expired orders' ends by a moment.
		running, err := svc.Running(ctx, sku)
		require.NoError(c, err)
		require.True(c, running.Idle(), "what a fair sale's close waits for: %+v", running)
	}, 10*time.Second, 200*time.Millisecond)

	rep, err := audit.Check(ctx, sys.AuditDeps(), sku)
	require.NoError(t, err)
	require.True(t, rep.OK, "%+v", rep.Violations)
	require.Equal(t, int64(57), rep.SKUs[0].Redis.RedisUnits)
	require.Zero(t, rep.SKUs[0].Redis.Drift)

	// The stuck five stay listed for the alert, by id; nothing more to close.
	n, listed, err := sys.Orders.CountPendingPastDeadline(ctx, time.Now().Add(-time.Second), 10)
	require.NoError(t, err)
	require.Equal(t, int64(5), n)
	var ids []string
	for _, o := range listed {
		ids = append(ids, o.OrderID)
	}
	require.ElementsMatch(t, stuck, ids)
	second := reconcile()
	require.Empty(t, second.Net.Closed)
	require.ElementsMatch(t, stuck, second.Net.Stuck)
}
