//go:build integration

package httpapi_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flashsale/flashsale/internal/app/apptest"
	"github.com/flashsale/flashsale/internal/httpapi"
	"github.com/flashsale/flashsale/internal/identity"
	"github.com/flashsale/flashsale/internal/testenv"
)

// logLines decodes every JSON log line written to b so far.
func logLines(t *testing.T, b *testenv.Buffer) []map[string]any {
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(b.Bytes()))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var m map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &m), "log line %q", sc.Bytes())
		out = append(out, m)
	}
	return out
}

// TestRequestIDReachesWorkerLogs buys through the API with X-Request-Id
// against the real Temporal dev server and a real worker, and finds the id
// on the worker's lines about the order: the workflow's (workflow.GetLogger,
// through the worker interceptor) and an activity's (CreateOrder's, from the
// propagated context). A buy without the header gets a minted id, echoed,
// that reaches the worker the same way.
func TestRequestIDReachesWorkerLogs(t *testing.T) {
	logs := &testenv.Buffer{}
	logger := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	sys := apptest.Start(t, apptest.Options{Name: "reqid-test", Logger: logger, API: &httpapi.Config{
		WebhookSecrets: []string{testSecret}, AdminToken: testAdmin, Identity: identity.Config{Secret: []byte(testBuyerKey)},
	}})
	id := sys.ID
	rdb := testenv.Redis(t)
	t.Cleanup(func() {
		for _, pattern := range []string{"fs:{sku:" + id + "*", "fs:placed:" + id + "*", "rate:fs:buy:" + id + "*"} {
			iter := rdb.Scan(context.Background(), 0, pattern, 1000).Iterator()
			for iter.Next(context.Background()) {
				_ = rdb.Unlink(context.Background(), iter.Val()).Err()
			}
		}
	})
	in := instanceOf(t, sys.API)
	sku := id + "-rid"
	in.putSKU(sku, 2, 100, 1, 1)

	buy := func(orderID, user, requestID string) string {
		h := buyerHeader(t, user)
		if requestID != "" {
			h.Set("X-Request-Id", requestID)
		}
		r := in.call(http.MethodPost, "/api/v1/orders", buyBody(t, orderID, user, sku, 1), h)
		require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
		echoed := r.header.Get("X-Request-Id")
		require.NotEmpty(t, echoed)
		return echoed
	}
	given := "lb-" + id + "-0001"
	require.Equal(t, given, buy(id+"-o1", id+"-u1", given))
	minted := buy(id+"-o2", id+"-u2", "")
	require.NotEqual(t, given, minted)

	first := orderID(id+"-u1", id+"-o1")
	requests := map[string]string{first: given, orderID(id+"-u2", id+"-o2"): minted}
	for orderID, requestID := range requests {
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			var workflowLine, activityLine bool
			for _, l := range logLines(t, logs) {
				if l["request_id"] != requestID {
					continue
				}
				switch {
				// The order workflow's line (workflows/order.go), through
				// the SDK's logger: it names the order and the workflow.
				case l["msg"] == "order status" && l["status"] == "PENDING_PAYMENT" && l["order_id"] == orderID &&
					l["WorkflowID"] == "order-"+orderID:
					workflowLine = true
				// CreateOrder's, in the worker's activity context.
				case l["msg"] == "order created" && l["order_id"] == orderID && l["activity"] == "CreateOrder":
					activityLine = true
				}
			}
			assert.True(c, workflowLine, "workflow log line with request_id %s for %s", requestID, orderID)
			assert.True(c, activityLine, "activity log line with request_id %s for %s", requestID, orderID)
		}, 20*time.Second, 100*time.Millisecond)
	}

	// No other order's lines carry these ids: the id names one request.
	for _, l := range logLines(t, logs) {
		if l["request_id"] == given && l["order_id"] != nil {
			require.Equal(t, first, l["order_id"], "%v", l)
		}
	}
}
