//go:build integration

package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/flashsale/flashsale/internal/httpapi"
)

// countingTemporal counts the order client's workflow queries: each one is
// a worker's task, and a closed order's a replay of its whole history.
type countingTemporal struct {
	client.Client
	queries atomic.Int64
}

func (c *countingTemporal) QueryWorkflow(ctx context.Context, workflowID, runID, queryType string, args ...any) (converter.EncodedValue, error) {
	c.queries.Add(1)
	return c.Client.QueryWorkflow(ctx, workflowID, runID, queryType, args...)
}

func (c *countingTemporal) QueryWorkflowWithOptions(ctx context.Context, req *client.QueryWorkflowWithOptionsRequest) (*client.QueryWorkflowWithOptionsResponse, error) {
	c.queries.Add(1)
	return c.Client.QueryWorkflowWithOptions(ctx, req)
}

// TestOrderReadsAreOwnerFirst: another buyer's order, open or closed,
// reads and cancels exactly as an unknown id does (same answer, same time
// within noise) and never costs a Temporal query; the owner still sees an
// open order live, a closed one with its refund, and a rejected one; reads
// are rate limited per buyer.
func TestOrderReadsAreOwnerFirst(t *testing.T) {
	s := newStack(t, stackOptions{})
	d := deps(t, s.b)
	temporal := &countingTemporal{Client: s.b.Temporal}
	d.Orders.Temporal = temporal
	srv, err := httpapi.New(d, s.apiConfig())
	require.NoError(t, err)
	api := startInstance(t, srv, true)

	open, closed := s.name("open"), s.name("closed")
	api.putSKU(open, 5, 300, 2, 1)
	api.putSKU(closed, 5, 700, 2, 1)
	alice := s.name("alice")
	openID, closedID := api.mustBuy(s.name("o-open"), alice, open, 1), api.mustBuy(s.name("o-closed"), alice, closed, 1)
	rejectedID := orderID(alice, s.name("o-rejected"))
	r := api.cancel(alice, closedID)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	// Money after the cancel: owed back, recorded in MySQL only.
	r = api.pay(callback{OrderID: closedID, TransactionID: s.name("late-tx"), Amount: 700, Status: "SUCCESS"})
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	// The per-user limit refuses a second unit: REJECTED, no MySQL row.
	// The edge answers that from Redis's count without a workflow; with the
	// SKU's limit unknown to Redis (a SKU defined before the count), MySQL
	// refuses it inside a workflow, which is the row-less order read here.
	require.NoError(t, s.b.Redis.Del(context.Background(), "fs:{sku:"+open+"}:limit").Err())
	r = api.buy(s.name("o-rejected"), alice, open, 1)
	require.Equal(t, "LIMIT_EXCEEDED", r.code(t))
	unknownID := s.name("o-nope")

	// Another buyer: every id answers as the unknown one, and no query.
	bob := buyerHeader(t, s.name("bob"))
	before := temporal.queries.Load()
	unknownRead := api.call(http.MethodGet, "/api/v1/orders/"+unknownID, nil, bob)
	require.Equal(t, http.StatusNotFound, unknownRead.status)
	require.Equal(t, "ORDER_NOT_FOUND", unknownRead.code(t))
	unknownCancel := api.call(http.MethodPost, "/api/v1/orders/"+unknownID+"/cancel", nil, bob)
	require.Equal(t, http.StatusNotFound, unknownCancel.status)
	for _, id := range []string{openID, closedID, rejectedID} {
		r := api.call(http.MethodGet, "/api/v1/orders/"+id, nil, bob)
		require.Equal(t, unknownRead.status, r.status, "read %s", id)
		require.Equal(t, string(unknownRead.body), string(r.body), "read %s", id)
		r = api.call(http.MethodPost, "/api/v1/orders/"+id+"/cancel", nil, bob)
		require.Equal(t, unknownCancel.status, r.status, "cancel %s", id)
		require.Equal(t, string(unknownCancel.body), string(r.body), "cancel %s", id)
	}

	// Timings: interleaved rounds, each read by a buyer of its own so the
	// per-buyer rate limit stays out of the way.
	const rounds = 50
	ids := map[string]string{"unknown": unknownID, "foreign open": openID, "foreign closed": closedID}
	kinds := []string{"unknown", "foreign open", "foreign closed"}
	took := map[string][]time.Duration{}
	for i := range rounds {
		h := buyerHeader(t, s.name(fmt.Sprintf("snoop%d", i)))
		for k := range kinds {
			kind := kinds[(i+k)%len(kinds)] // rotate, so none always goes first
			start := time.Now()
			r := api.call(http.MethodGet, "/api/v1/orders/"+ids[kind], nil, h)
			took[kind] = append(took[kind], time.Since(start))
			require.Equal(t, string(unknownRead.body), string(r.body), kind)
		}
	}
	unknown := median(took["unknown"])
	for _, kind := range kinds {
		t.Logf("median read of another buyer's id, %d rounds: %s %v", rounds, kind, median(took[kind]))
	}
	for _, kind := range kinds[1:] {
		m := median(took[kind])
		require.LessOrEqual(t, (m - unknown).Abs(), max(2*time.Millisecond, unknown/2),
			"%s reads in %v, an unknown id in %v", kind, m, unknown)
	}
	require.Zero(t, temporal.queries.Load()-before, "no Temporal query for another buyer's order")

	// The owner: the open order live from its workflow, the closed one
	// from MySQL with its refund, the rejected one as before.
	aliceH := buyerHeader(t, alice)
	before = temporal.queries.Load()
	r = api.call(http.MethodGet, "/api/v1/orders/"+openID, nil, aliceH)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	o := r.json(t)
	require.Equal(t, "PENDING_PAYMENT", o["status"])
	require.Equal(t, alice, o["user_id"])
	require.Equal(t, []any{map[string]any{"sku_id": open, "quantity": float64(1)}}, o["items"])
	require.Equal(t, int64(1), temporal.queries.Load()-before, "an open order is read live")

	before = temporal.queries.Load()
	r = api.call(http.MethodGet, "/api/v1/orders/"+closedID, nil, aliceH)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	o = r.json(t)
	require.Zero(t, temporal.queries.Load()-before, "a closed order is read from MySQL")
	require.Equal(t, "CANCELLED", o["status"])
	require.Equal(t, "CANCELLED_BY_BUYER", o["reason"])
	require.Equal(t, "REQUIRED", o["refund"])
	require.Equal(t, float64(700), o["amount"])
	require.Equal(t, []any{map[string]any{"sku_id": closed, "quantity": float64(1)}}, o["items"])
	require.Equal(t, []any{map[string]any{
		"transaction_id": s.name("late-tx"), "order_status": "CANCELLED",
		"refund": "REQUIRED", "reason": "ORDER_CLOSED",
	}}, o["payments"])
	// What the workflow itself says (as the read did before MySQL served it).
	live, err := d.Orders.Status(context.Background(), closedID)
	require.NoError(t, err)
	require.Equal(t, string(live.Status), o["status"])
	require.Equal(t, string(live.Reason), o["reason"])
	require.Len(t, live.Payments, 1)
	require.Equal(t, live.Payments[0].TransactionID, s.name("late-tx"))
	require.Equal(t, string(live.Payments[0].Reason), "ORDER_CLOSED")
	require.Equal(t, "CANCELLED", api.order(closedID)["status"], "operators read it too")

	r = api.call(http.MethodGet, "/api/v1/orders/"+rejectedID, nil, aliceH)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	require.Equal(t, "REJECTED", r.json(t)["status"])
	require.Equal(t, "LIMIT_EXCEEDED", r.json(t)["reason"])

	before = temporal.queries.Load()
	r = api.cancel(alice, closedID)
	require.Equal(t, http.StatusConflict, r.status, "%s", r.body)
	require.Equal(t, "ORDER_CLOSED", r.code(t))
	require.Zero(t, temporal.queries.Load()-before, "a closed order is refused from MySQL")
	r = api.cancel(alice, rejectedID)
	require.Equal(t, http.StatusConflict, r.status, "%s", r.body)
	require.Equal(t, "ORDER_CLOSED", r.code(t))
	r = api.cancel(alice, openID)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	require.Equal(t, "CANCELLED", r.json(t)["status"])

	// A buyer asking without pause is told to wait; operators are not.
	carol := buyerHeader(t, s.name("carol"))
	var limited response
	for range 50 {
		if limited = api.call(http.MethodGet, "/api/v1/orders/"+unknownID, nil, carol); limited.status != http.StatusNotFound {
			break
		}
	}
	require.Equal(t, http.StatusTooManyRequests, limited.status, "%s", limited.body)
	require.Equal(t, "RATE_LIMITED", limited.code(t))
	require.NotEmpty(t, limited.header.Get("Retry-After"))
	for range 20 {
		require.Equal(t, http.StatusOK, api.call(http.MethodGet, "/api/v1/orders/"+openID, nil, adminHeader()).status)
	}
	// What starter check runs: no invariant broken by anything above.
	s.checkClean(open, closed)
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
