//go:build integration

package orders_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/internal/app/apptest"
	"github.com/flashsale/flashsale/internal/orders"
	"github.com/flashsale/flashsale/workflows"
)

// Orders of both workflow types are found by RunningOrdersQuery on the
// real visibility store, and a sale's void (CancelRunning) cancels both: an
// OrderWorkflow still in flight from before OrderWorkflowV2, started here as
// the starters used to, and an OrderWorkflowV2 placed as the starters do now.
func TestRunningOrdersOfBothTypesAreFoundAndCancelled(t *testing.T) {
	ctx := context.Background()
	sys := apptest.Start(t, apptest.Options{Name: "types"})
	sku := sys.ID + "-both"
	_, err := sys.Orders.PutSKU(ctx, flashsale.SKU{ID: sku, Total: 4, Price: 100, Buckets: 2, PerUserLimit: 1})
	require.NoError(t, err)
	_, err = sys.Stock.Preheat(ctx, sku, 4, 2)
	require.NoError(t, err)
	svc := &orders.Service{Temporal: sys.Temporal, TaskQueue: sys.Config.TaskQueue, Orders: sys.Orders}

	v2 := workflows.OrderInput{OrderID: sys.ID + "-v2", UserID: "u-v2", Items: []flashsale.Item{{SKU: sku, Quantity: 1}}}
	res, err := svc.Place(ctx, v2)
	require.NoError(t, err)
	require.Equal(t, flashsale.StatusPendingPayment, res.Status)

	v1 := workflows.OrderInput{OrderID: sys.ID + "-v1", UserID: "u-v1", Items: v2.Items}
	start := sys.Temporal.NewWithStartWorkflowOperation(client.StartWorkflowOptions{
		ID: workflows.OrderWorkflowID(v1.OrderID), TaskQueue: sys.Config.TaskQueue,
		WorkflowIDConflictPolicy: enums.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		TypedSearchAttributes: temporal.NewSearchAttributes(
			workflows.OrderStatusKey.ValueSet(string(flashsale.StatusReserving)),
			workflows.UserIDKey.ValueSet(v1.UserID), workflows.SKUIDsKey.ValueSet([]string{sku})),
	}, workflows.OrderWorkflow, v1)
	h, err := sys.Temporal.UpdateWithStartWorkflow(ctx, client.UpdateWithStartWorkflowOptions{
		StartWorkflowOperation: start,
		UpdateOptions: client.UpdateWorkflowOptions{UpdateName: workflows.UpdateReserve,
			Args: []any{workflows.ReserveRequest{UserID: v1.UserID}}, WaitForStage: client.WorkflowUpdateStageCompleted},
	})
	require.NoError(t, err)
	var r workflows.Reservation
	require.NoError(t, h.Get(ctx, &r))
	require.Equal(t, flashsale.StatusPendingPayment, r.Status)

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
		workflows.OrderWorkflowID(v1.OrderID): "OrderWorkflow",
		workflows.OrderWorkflowID(v2.OrderID): "OrderWorkflowV2",
	}, types)

	n, err := svc.CancelRunning(ctx, sku, "void", map[string]bool{})
	require.NoError(t, err)
	require.Equal(t, 2, n)
	for _, id := range []string{v1.OrderID, v2.OrderID} {
		var v workflows.OrderView
		require.NoError(t, sys.Temporal.GetWorkflow(ctx, workflows.OrderWorkflowID(id), "").Get(ctx, &v))
		require.Equal(t, flashsale.StatusCancelled, v.Status, id)
	}
	inv, err := sys.Orders.Inventory(ctx, sku)
	require.NoError(t, err)
	require.Equal(t, int64(4), inv.Available, "both units back")
}
