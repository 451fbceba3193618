//go:build integration

package orders_test

import (
	"context"
	"fmt"
	"strings"
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

// Temporal's visibility store, which an operator browses in the Web UI,
// holds no raw user id: every order of the task queue carries its buyer
// only as the keyed hash, in its search attributes, memo and summary; and
// the buyer's orders are found by that hash (`starter orders --user`). A
// waitlist offer, started by the workflow itself, carries its buyer's hash
// too.
func TestVisibilityHoldsNoRawUserID(t *testing.T) {
	ctx := context.Background()
	sys := apptest.Start(t, apptest.Options{Name: "pii"})
	svc := &orders.Service{Temporal: sys.Temporal, TaskQueue: sys.Config.TaskQueue, Orders: sys.Orders,
		UserIDKey: sys.Config.UserIDKey}
	sku := sys.ID + "-pii"
	_, err := sys.Orders.PutSKU(ctx, flashsale.SKU{ID: sku, Total: 3, Price: 100, Buckets: 2, PerUserLimit: 5})
	require.NoError(t, err)
	_, err = sys.Stock.Preheat(ctx, sku, 3, 2)
	require.NoError(t, err)
	user := "alice.buyer-" + sys.ID
	var placed []string
	for i := range 3 {
		id := fmt.Sprintf("%s-pii-%d", sys.ID, i)
		res, err := svc.Place(ctx, workflows.OrderInput{OrderID: id, UserID: user, Items: []flashsale.Item{{SKU: sku, Quantity: 1}}})
		require.NoError(t, err)
		require.Equal(t, flashsale.StatusPendingPayment, res.Status)
		placed = append(placed, id)
	}
	// Sold out: a second buyer waits, and the cancelled unit is offered
	// to them by the released order's workflow.
	waiting := "bob.buyer-" + sys.ID
	_, err = sys.Stock.JoinWaitlist(ctx, sku, waiting, 10)
	require.NoError(t, err)
	_, err = svc.Cancel(ctx, placed[0])
	require.NoError(t, err)
	offer := flashsale.WaitlistOrderID(placed[0])

	digest := flashsale.UserIDDigest(sys.Config.UserIDKey, user)
	require.NotContains(t, digest, user)
	query := fmt.Sprintf("TaskQueue = '%s'", sys.Config.TaskQueue)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		resp, err := sys.Temporal.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: query})
		require.NoError(c, err)
		require.Len(c, resp.GetExecutions(), 4)
		for _, e := range resp.GetExecutions() {
			for _, raw := range []string{user, waiting} {
				for name, p := range e.GetSearchAttributes().GetIndexedFields() {
					require.NotContains(c, string(p.GetData()), raw, "search attribute %s", name)
				}
				for name, p := range e.GetMemo().GetFields() {
					require.NotContains(c, string(p.GetData()), raw, "memo %s", name)
				}
			}
			want := digest
			if e.GetExecution().GetWorkflowId() == workflows.OrderWorkflowID(offer) {
				want = flashsale.UserIDDigest(sys.Config.UserIDKey, waiting)
			}
			require.Equal(c, `"`+want+`"`, string(e.GetSearchAttributes().GetIndexedFields()["UserId"].GetData()))
		}
	}, 20*time.Second, 200*time.Millisecond)
	for _, id := range placed {
		d, err := sys.Temporal.DescribeWorkflow(ctx, workflows.OrderWorkflowID(id), "")
		require.NoError(t, err)
		summary, err := d.GetStaticSummary()
		require.NoError(t, err)
		require.True(t, strings.Contains(summary, digest) && !strings.Contains(summary, user), summary)
	}

	got, found, err := svc.BuyerOrders(ctx, user, 10)
	require.NoError(t, err)
	require.Equal(t, digest, got)
	var ids []string
	for _, o := range found {
		ids = append(ids, o.OrderID)
	}
	require.ElementsMatch(t, placed, ids)
}
