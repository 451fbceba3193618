//go:build integration

package orders_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/workflowservice/v1"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/internal/app/apptest"
	"github.com/flashsale/flashsale/internal/orders"
	"github.com/flashsale/flashsale/workflows"
)

// Running orders are found by RunningOrdersQuery on the real visibility
// store, under the one order type, and a sale's void (CancelRunning)
// cancels them.
func TestRunningOrdersAreFoundAndCancelled(t *testing.T) {
	ctx := context.Background()
	sys := apptest.Start(t, apptest.Options{Name: "types"})
	sku := sys.ID + "-both"
	_, err := sys.Orders.PutSKU(ctx, flashsale.SKU{ID: sku, Total: 4, Price: 100, Buckets: 2, PerUserLimit: 1})
	require.NoError(t, err)
	_, err = sys.Stock.Preheat(ctx, sku, 4, 2)
	require.NoError(t, err)
	svc := &orders.Service{Temporal: sys.Temporal, TaskQueue: sys.Config.TaskQueue, Orders: sys.Orders}

	var ids []string
	for _, u := range []string{"u-a", "u-b"} {
		in := workflows.OrderInput{OrderID: sys.ID + "-" + u, UserID: u, Items: []flashsale.Item{{SKU: sku, Quantity: 1}}}
		res, err := svc.Place(ctx, in)
		require.NoError(t, err)
		require.Equal(t, flashsale.StatusPendingPayment, res.Status)
		ids = append(ids, in.OrderID)
	}

	types := map[string]string{}
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		resp, err := sys.Temporal.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: workflows.RunningOrdersQuery(sku)})
		if !assert.NoError(c, err) {
			return
		}
		for _, e := range resp.GetExecutions() {
			types[e.GetExecution().GetWorkflowId()] = e.GetType().GetName()
		}
		assert.Len(c, types, 2)
	}, 20*time.Second, 200*time.Millisecond, "visibility lags by about a second")
	require.Equal(t, map[string]string{
		workflows.OrderWorkflowID(ids[0]): "OrderWorkflow",
		workflows.OrderWorkflowID(ids[1]): "OrderWorkflow",
	}, types)

	n, err := svc.CancelRunning(ctx, sku, "void", map[string]bool{})
	require.NoError(t, err)
	require.Equal(t, 2, n)
	for _, id := range ids {
		var v workflows.OrderView
		require.NoError(t, sys.Temporal.GetWorkflow(ctx, workflows.OrderWorkflowID(id), "").Get(ctx, &v))
		require.Equal(t, flashsale.StatusCancelled, v.Status, id)
	}
	inv, err := sys.Orders.Inventory(ctx, sku)
	require.NoError(t, err)
	require.Equal(t, int64(4), inv.Available, "both units back")
}
