//go:build integration

package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/flashsale/flashsale"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/workflowservice/v1"
)

// countUserWorkflows asks Temporal's visibility how many order workflows
// name user (the UserId search attribute).
func (s *stack) countUserWorkflows(user string) int64 {
	s.t.Helper()
	resp, err := s.b.Temporal.CountWorkflow(context.Background(), &workflowservice.CountWorkflowExecutionsRequest{
		Namespace: s.cfg.TemporalNamespace,
		Query:     fmt.Sprintf("UserId = '%s'", flashsale.UserIDDigest(s.cfg.UserIDKey, user)),
	})
	require.NoError(s.t, err)
	return resp.GetCount()
}

// A buyer who holds the SKU's per-buyer limit, or asks for more than it in
// one line, is answered 422 LIMIT_EXCEEDED by the edge from Redis's count,
// and no order workflow is started for them (issue 21: one token ordering
// every unit left kept Redis at 0 and cost a workflow per try). Other
// buyers still buy; a cancelled order gives the allowance back; a repeat of
// the buyer's placed order id still gets its first answer.
func TestLimitAtTheEdge(t *testing.T) {
	// The rate limit stays out of the way: the point is the limit.
	s := newStack(t, stackOptions{buyRate: 1000})
	api := s.api
	sku := s.name("phone")
	api.putSKU(sku, 20, 100, 4, 2)
	hoarder, greedy, other := s.name("hoarder"), s.name("greedy"), s.name("other")

	r := api.buy(s.name("h-1"), hoarder, sku, 2)
	require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
	first := r.json(t)["order_id"].(string)
	started := api.metrics().WorkflowsStarted
	require.EqualValues(t, 1, started)

	for i := range 10 {
		r := api.buy(s.name(fmt.Sprintf("h-more-%d", i)), hoarder, sku, 1)
		require.Equal(t, http.StatusUnprocessableEntity, r.status, "%s", r.body)
		require.Equal(t, "LIMIT_EXCEEDED", r.code(t))
		// Server-chosen order ids too.
		r = api.buy("", hoarder, sku, 1)
		require.Equal(t, http.StatusUnprocessableEntity, r.status, "%s", r.body)
		require.Equal(t, "LIMIT_EXCEEDED", r.code(t))
	}
	// More than the limit in one line, from a buyer who holds nothing.
	r = api.buy(s.name("g-1"), greedy, sku, 3)
	require.Equal(t, http.StatusUnprocessableEntity, r.status, "%s", r.body)
	require.Equal(t, "LIMIT_EXCEEDED", r.code(t))

	// The repeat of a placed order (the buyer's key again) is not a new
	// order: its first answer.
	r = api.buy(s.name("h-1"), hoarder, sku, 2)
	require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
	require.Equal(t, first, r.json(t)["order_id"])

	m := api.metrics()
	require.Equal(t, started, m.WorkflowsStarted, "refused buyers started workflows")
	// Read from the JSON, so this test compiles (and fails) without the fix.
	edgeStats := api.call(http.MethodGet, "/metrics", nil, nil).json(t)["edge"].(map[string]any)
	require.EqualValues(t, 21, edgeStats["shed_limit_exceeded"])

	// Another buyer still buys, up to the limit.
	r = api.buy(s.name("o-1"), other, sku, 2)
	require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
	require.Equal(t, started+1, api.metrics().WorkflowsStarted)

	// Temporal agrees: one workflow for the hoarder, none for the greedy.
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.EqualValues(c, 1, s.countUserWorkflows(hoarder))
		assert.EqualValues(c, 1, s.countUserWorkflows(other))
	}, 30*time.Second, 250*time.Millisecond)
	require.Zero(t, s.countUserWorkflows(greedy))
	require.EqualValues(t, 16, api.inventory(sku).Available)

	// Cancelling gives the allowance back once the order has released its
	// units.
	r = api.cancel(hoarder, first)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.EqualValues(c, 18, api.inventory(sku).Available)
	}, 30*time.Second, 100*time.Millisecond)
	r = api.buy(s.name("h-after"), hoarder, sku, 2)
	require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
	// What starter check runs: no invariant broken by anything above.
	s.checkClean(sku)
}
