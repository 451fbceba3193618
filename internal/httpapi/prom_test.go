//go:build integration

package httpapi_test

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flashsale/flashsale/internal/httpapi"
	"github.com/flashsale/flashsale/internal/testenv"
	"github.com/flashsale/flashsale/workflows"
)

// promValue gathers reg and returns the counter, gauge or histogram count
// of family name whose labels include want; -1 when there is none.
func promValue(t require.TestingT, reg *prometheus.Registry, name string, want map[string]string) float64 {
	fams, err := reg.Gather()
	require.NoError(t, err)
	for _, f := range fams {
		if f.GetName() == name {
			return testenv.MetricValue(f, want)
		}
	}
	return -1
}

// TestPrometheusCountsBuys: after N buys of an N-unit SKU and one more, the
// buy route shows N 201s and one 409, the same numbers as the JSON
// snapshot, and the buy answer times split into admitted and shed.
func TestPrometheusCountsBuys(t *testing.T) {
	s := newStack(t, stackOptions{})
	reg := prometheus.NewRegistry()
	require.NoError(t, s.api.server.RegisterMetrics(reg))
	sku := s.name("sku")
	s.api.putSKU(sku, 4, 100, 2, 1)
	// Put on sale through this instance: its gauges show before any buy.
	require.Equal(t, 4.0, promValue(t, reg, "flashsale_sku_redis_available_units", map[string]string{"sku": sku}))
	require.Equal(t, 4.0, promValue(t, reg, "flashsale_sku_mysql_units", map[string]string{"sku": sku, "state": "available"}))
	b0 := promValue(t, reg, "flashsale_sku_redis_bucket_units", map[string]string{"sku": sku, "bucket": "0"})
	b1 := promValue(t, reg, "flashsale_sku_redis_bucket_units", map[string]string{"sku": sku, "bucket": "1"})
	require.Equal(t, []float64{2, 2}, []float64{b0, b1}, "two buckets of two")

	const n = 4
	for i := range n {
		r := s.api.buy(s.name("o"+strconv.Itoa(i)), s.name("u"+strconv.Itoa(i)), sku, 1)
		require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
	}
	r := s.api.buy(s.name("late"), s.name("late"), sku, 1)
	require.Equal(t, http.StatusConflict, r.status, "%s", r.body)

	route := "POST /api/v1/orders"
	require.Equal(t, float64(n), promValue(t, reg, "flashsale_http_requests_total", map[string]string{"route": route, "code": "201"}))
	require.Equal(t, 1.0, promValue(t, reg, "flashsale_http_requests_total", map[string]string{"route": route, "code": "409"}))
	require.Equal(t, float64(n+1), promValue(t, reg, "flashsale_http_request_duration_seconds", map[string]string{"route": route}))
	require.Equal(t, float64(n), promValue(t, reg, "flashsale_buy_duration_seconds", map[string]string{"outcome": "admitted"}))
	require.Equal(t, 1.0, promValue(t, reg, "flashsale_buy_duration_seconds", map[string]string{"outcome": "shed"}))
	require.Equal(t, float64(n), promValue(t, reg, "flashsale_order_workflows_started_total", nil))
	require.Equal(t, 1.0, promValue(t, reg, "flashsale_edge_decisions_total", map[string]string{"decision": "sold_out_stock"}))

	// The JSON snapshot on the public port agrees.
	m := s.api.metrics()
	require.Equal(t, int64(n), m.Responses["201"])
	require.Equal(t, int64(n), m.WorkflowsStarted)

	// The per-SKU gauges, read at scrape time and cached for a second.
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Equal(c, 0.0, promValue(c, reg, "flashsale_sku_redis_available_units", map[string]string{"sku": sku}))
		assert.Equal(c, 1.0, promValue(c, reg, "flashsale_sku_sold_out", map[string]string{"sku": sku}))
		assert.Equal(c, float64(n), promValue(c, reg, "flashsale_sku_mysql_units", map[string]string{"sku": sku, "state": "frozen"}))
		assert.Equal(c, 0.0, promValue(c, reg, "flashsale_sku_mysql_units", map[string]string{"sku": sku, "state": "available"}))
		assert.Equal(c, 0.0, promValue(c, reg, "flashsale_sku_scrape_errors", nil))
	}, 5*time.Second, 100*time.Millisecond)
}

// TestPrometheusCountsClientHangUp: a buyer who hangs up before the answer
// is counted under 499 on the buy route.
func TestPrometheusCountsClientHangUp(t *testing.T) {
	s := newStack(t, stackOptions{})
	sku := s.name("sku")
	s.api.putSKU(sku, 5, 100, 2, 1)

	// No worker polls this task queue: the placement waits until the
	// client hangs up.
	cfg := s.cfg
	cfg.TaskQueue = "nobody-polls-" + s.id
	b := s.sys.Connect(cfg, testLogger())
	server, err := httpapi.New(deps(t, b), s.apiConfig())
	require.NoError(t, err)
	reg := prometheus.NewRegistry()
	require.NoError(t, server.RegisterMetrics(reg))
	in := startInstance(t, server, true)

	buyer, order := s.name("impatient"), s.name("o1")
	t.Cleanup(func() {
		_ = b.Temporal.TerminateWorkflow(context.Background(), workflows.OrderWorkflowID(order), "", "test over")
	})
	req, err := http.NewRequest(http.MethodPost, in.url+"/api/v1/orders", bytes.NewReader(buyBody(t, order, buyer, sku, 1)))
	require.NoError(t, err)
	req.Header = buyerHeader(t, buyer)
	req.Header.Set("Content-Type", "application/json")
	_, err = (&http.Client{Timeout: 500 * time.Millisecond}).Do(req)
	var netErr net.Error
	require.ErrorAs(t, err, &netErr, "the client gave up")

	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Equal(c, 1.0, promValue(c, reg, "flashsale_http_requests_total",
			map[string]string{"route": "POST /api/v1/orders", "code": "499"}))
	}, 35*time.Second, 50*time.Millisecond)
	require.Equal(t, 1.0, promValue(t, reg, "flashsale_order_placements_total", map[string]string{"result": "error"}))
	require.Equal(t, 0.0, promValue(t, reg, "flashsale_edge_decisions_total", map[string]string{"decision": "unavailable"}))
}
