//go:build integration

package orders_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/internal/app/apptest"
	"github.com/flashsale/flashsale/internal/catalog"
	"github.com/flashsale/flashsale/internal/orders"
	"github.com/flashsale/flashsale/workflows"
)

// The one answer to "does anything of this SKU still run?" on the real
// stack: an unpaid order counts in MySQL (Frozen) and on Temporal's
// visibility (Orders) until it is cancelled, and a sale workflow counts
// (Sale) until it ends; a SKU MySQL does not know is UnknownSKU.
func TestRunningAnswersWhatOfASKURuns(t *testing.T) {
	ctx := context.Background()
	sys := apptest.Start(t, apptest.Options{Name: "running"})
	svc := &orders.Service{Temporal: sys.Temporal, TaskQueue: sys.Config.TaskQueue, Orders: sys.Orders}
	newSKU := func(name string) string {
		t.Helper()
		sku := sys.ID + "-" + name
		_, err := sys.Orders.PutSKU(ctx, flashsale.SKU{ID: sku, Total: 3, Price: 100, Buckets: 2, PerUserLimit: 1})
		require.NoError(t, err)
		_, err = sys.Stock.Preheat(ctx, sku, 3, 2)
		require.NoError(t, err)
		return sku
	}
	// eventually waits out visibility's lag of about a second.
	eventually := func(sku string, want orders.Running, msg string) {
		t.Helper()
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			got, err := svc.Running(ctx, sku)
			if assert.NoError(c, err) {
				assert.Equal(c, want, got)
			}
		}, 20*time.Second, 200*time.Millisecond, msg)
	}

	_, err := svc.Running(ctx, sys.ID+"-never-defined")
	require.ErrorIs(t, err, &flashsale.Error{Code: flashsale.UnknownSKU})

	sku := newSKU("order")
	idle, err := svc.Running(ctx, sku)
	require.NoError(t, err)
	require.True(t, idle.Idle(), "%+v", idle)

	in := workflows.OrderInput{OrderID: sys.ID + "-o1", UserID: "u1", Items: []flashsale.Item{{SKU: sku, Quantity: 1}}}
	res, err := svc.Place(ctx, in)
	require.NoError(t, err)
	require.Equal(t, flashsale.StatusPendingPayment, res.Status)
	eventually(sku, orders.Running{Frozen: 1, Orders: 1}, "an unpaid order runs")
	open, err := svc.RunningOrders(ctx, sku)
	require.NoError(t, err)
	require.Len(t, open, 1)
	require.Contains(t, open, in.OrderID, "listed by order id")
	n, err := svc.CountRunningOrders(ctx, sku)
	require.NoError(t, err)
	require.EqualValues(t, 1, n)

	_, err = svc.Cancel(ctx, in.OrderID)
	require.NoError(t, err)
	eventually(sku, orders.Running{}, "a cancelled order is over")

	sku = newSKU("sale")
	sales := catalog.Sales{DB: sys.Orders, Temporal: sys.Temporal, TaskQueue: sys.Config.TaskQueue}
	_, err = sales.Start(ctx, workflows.SaleInput{SKU: sku, OpensAt: time.Now().Add(time.Hour)})
	require.NoError(t, err)
	run, err := svc.Running(ctx, sku)
	require.NoError(t, err)
	require.Equal(t, orders.Running{Sale: true}, run, "a sale not yet open runs")
	_, err = sales.Control(ctx, sku, workflows.UpdateSaleVoid, "test")
	require.NoError(t, err)
	require.NoError(t, sys.Temporal.GetWorkflow(ctx, workflows.SaleWorkflowID(sku), "").Get(ctx, nil))
	run, err = svc.Running(ctx, sku)
	require.NoError(t, err)
	require.True(t, run.Idle(), "an ended sale: %+v", run)
}
