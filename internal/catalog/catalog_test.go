//go:build integration

package catalog_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/mocks"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/internal/catalog"
	"github.com/flashsale/flashsale/internal/inventory"
	"github.com/flashsale/flashsale/internal/orderdb"
	"github.com/flashsale/flashsale/internal/testenv"
	"github.com/flashsale/flashsale/workflows"
)

// Define and Preheat on the real MySQL and Redis; Temporal's answer to
// "how many order workflows of this SKU run" is scripted.
func TestDefineAndPreheatRefuseALiveSale(t *testing.T) {
	ctx := context.Background()
	orders, err := orderdb.Open(ctx, testenv.MySQLDSN(t))
	require.NoError(t, err)
	t.Cleanup(func() { _ = orders.Close() })
	stock := inventory.New(testenv.Redis(t), inventory.Options{})
	sku := "catalog-" + testenv.UniqueID(t)

	running := int64(0)
	tc := mocks.NewClient(t)
	tc.On("CountWorkflow", mock.Anything, mock.MatchedBy(func(r *workflowservice.CountWorkflowExecutionsRequest) bool {
		return r.GetQuery() == workflows.RunningOrdersQuery(sku)
	})).Return(func(context.Context, *workflowservice.CountWorkflowExecutionsRequest) (*workflowservice.CountWorkflowExecutionsResponse, error) {
		return &workflowservice.CountWorkflowExecutionsResponse{Count: running}, nil
	}).Maybe()
	saleRuns := false
	tc.On("DescribeWorkflow", mock.Anything, "sale-"+sku, "").Return(
		func(context.Context, string, string) (*client.WorkflowExecutionDescription, error) {
			if !saleRuns {
				return nil, serviceerror.NewNotFound("no sale")
			}
			return &client.WorkflowExecutionDescription{WorkflowExecutionMetadata: client.WorkflowExecutionMetadata{
				Status: enums.WORKFLOW_EXECUTION_STATUS_RUNNING}}, nil
		}).Maybe()
	c := catalog.Catalog{DB: orders, Redis: stock, Temporal: tc}

	// A new SKU is idle without asking Temporal.
	d, err := c.Define(ctx, flashsale.SKU{ID: sku, Total: 10, Price: 100, Buckets: 4, PerUserLimit: 1})
	require.NoError(t, err)
	require.EqualValues(t, 10, d.Preheat.RedisAvailable)
	tc.AssertNotCalled(t, "CountWorkflow", mock.Anything, mock.Anything)

	// Orders in flight (no unit frozen yet): both refuse, Redis untouched.
	running = 2
	_, err = c.Preheat(ctx, sku)
	require.ErrorIs(t, err, &flashsale.Error{Code: flashsale.SKUInUse})
	_, err = c.Define(ctx, flashsale.SKU{ID: sku, Total: 3, Price: 100, Buckets: 4, PerUserLimit: 1})
	require.ErrorIs(t, err, &flashsale.Error{Code: flashsale.SKUInUse})
	st, err := stock.Stock(ctx, sku)
	require.NoError(t, err)
	require.EqualValues(t, 10, st.Available)

	// An unpaid order holds a unit: refused before Temporal is asked.
	running = 0
	_, err = orders.CreateOrder(ctx, orderdb.NewOrder{
		Order: flashsale.Order{OrderID: sku + "-o1", UserID: "u1", Items: []flashsale.Item{{SKU: sku, Quantity: 1}}},
		PayBy: time.Now().Add(time.Hour),
	})
	require.NoError(t, err)
	_, err = c.Preheat(ctx, sku)
	require.ErrorIs(t, err, &flashsale.Error{Code: flashsale.SKUInUse})

	// The orders are over, but a fair sale's workflow still runs (its end
	// removes the SKU's Redis keys): refused too.
	_, err = orders.CloseOrder(ctx, sku+"-o1", flashsale.StatusCancelled, "test")
	require.NoError(t, err)
	saleRuns = true
	_, err = c.Preheat(ctx, sku)
	require.ErrorIs(t, err, &flashsale.Error{Code: flashsale.SKUInUse})

	// The sale is over and ended: preheat reloads what MySQL has and puts
	// the SKU on sale again (the ended mark goes).
	saleRuns = false
	_, err = orders.EndSale(ctx, sku)
	require.NoError(t, err)
	d, err = c.Preheat(ctx, sku)
	require.NoError(t, err)
	require.EqualValues(t, 10, d.Preheat.RedisAvailable)
	require.EqualValues(t, 10, d.Inventory.Available)
	ended, err := orders.SaleEndedAt(ctx, sku)
	require.NoError(t, err)
	require.True(t, ended.IsZero(), "a preheat starts another sale")
}
