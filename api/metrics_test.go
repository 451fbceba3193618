//go:build integration

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/internal/testenv"
)

// scrape reads a metrics listener's Prometheus text exposition.
func scrape(t require.TestingT, addr string) map[string]*dto.MetricFamily {
	resp, err := http.Get("http://" + addr + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, resp.Header.Get("Content-Type"), "text/plain")
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	require.NoError(t, err)
	return fams
}

// value is the value of the series of family name whose labels include
// want; -1 when there is none.
func value(fams map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	return testenv.MetricValue(fams[name], want)
}

// exposedNames are the series names a scrape shows, histograms with their
// _bucket, _sum and _count as PromQL sees them.
func exposedNames(fams map[string]*dto.MetricFamily) map[string]bool {
	out := map[string]bool{}
	for name, f := range fams {
		switch f.GetType() {
		case dto.MetricType_HISTOGRAM:
			out[name+"_bucket"], out[name+"_sum"], out[name+"_count"] = true, true, true
		case dto.MetricType_SUMMARY:
			out[name], out[name+"_sum"], out[name+"_count"] = true, true, true
		default:
			out[name] = true
		}
	}
	return out
}

// ruleMetrics lists the metric names deploy/prometheus's rules read, the
// series the recording rules define and Prometheus's own up left out.
func ruleMetrics(t *testing.T) []string {
	t.Helper()
	type rules struct {
		Groups []struct {
			Rules []struct {
				Record string `yaml:"record"`
				Expr   string `yaml:"expr"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	var exprs []string
	recorded := map[string]bool{}
	for _, f := range []string{"recording.rules.yml", "alerts.rules.yml"} {
		raw, err := os.ReadFile("../deploy/prometheus/" + f)
		require.NoError(t, err)
		var r rules
		require.NoError(t, yaml.Unmarshal(raw, &r), f)
		for _, g := range r.Groups {
			for _, rule := range g.Rules {
				exprs = append(exprs, rule.Expr)
				if rule.Record != "" {
					recorded[rule.Record] = true
				}
			}
		}
	}
	// A recorded name (level:metric:ops) is one token; label matchers and
	// strings are dropped first.
	ident := regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*`)
	strip := regexp.MustCompile(`\{[^}]*\}|"[^"]*"|\b(?:by|on|without|ignoring)\s*\([^)]*\)`)
	seen := map[string]bool{}
	for _, e := range exprs {
		for _, name := range ident.FindAllString(strip.ReplaceAllString(e, ""), -1) {
			if recorded[name] || !regexp.MustCompile(`^(?:flashsale|temporal|go_sql)_`).MatchString(name) {
				continue
			}
			seen[name] = true
		}
	}
	require.Greater(t, len(seen), 10, "the rules read metrics")
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// onlyAfterFailure are rule metrics a healthy sale does not show: the
// Temporal SDK exports a counter from its first increment. Each is checked
// against the SDK's own name for it instead.
var onlyAfterFailure = map[string]string{
	"temporal_workflow_failed_total": "WorkflowFailedCounter",
}

// onlyWhileOverdue are the worker's gauges labelled by an order that is
// overdue (internal/app's backlog gauges): a healthy sale has none. The
// count beside them (flashsale_orders_overdue) is always exported.
var onlyWhileOverdue = map[string]string{
	"flashsale_order_overdue_seconds": "flashsale_orders_overdue",
}

// TestMetricsDuringSale runs the real api and worker with METRICS_ADDR,
// sells 3 units to 5 buyers through the API (one pays, one cancels), and
// checks the Prometheus scrapes of both: the counts of the sale, the stock
// gauges, the Temporal SDK's metrics, and every metric the Grafana
// dashboard queries.
func TestMetricsDuringSale(t *testing.T) {
	id := testenv.UniqueID(t)
	addr, apiMetrics, workerMetrics := testenv.FreeAddr(t), testenv.FreeAddr(t), testenv.FreeAddr(t)
	env := append(os.Environ(),
		"MYSQL_DSN="+testenv.MySQLDSN(t),
		"REDIS_ADDR="+testenv.RedisAddr(),
		"TEMPORAL_ADDRESS="+testenv.TemporalAddress(),
		"TASK_QUEUE=api-metrics-"+id,
		"HTTP_ADDR="+addr,
		"WEBHOOK_SECRET="+secret,
		"ADMIN_TOKEN="+admin,
		"BUYER_JWT_SECRET="+buyerSecret,
	)
	start(t, append(env, "METRICS_ADDR="+workerMetrics), "worker")
	start(t, append(env, "METRICS_ADDR="+apiMetrics), "api")
	require.Eventually(t, func() bool {
		_, _, err := runBin(env, "api", "-healthcheck")
		return err == nil
	}, 30*time.Second, 100*time.Millisecond, "api ready")

	base := "http://" + addr
	call := func(method, path, body string, header http.Header) int {
		req, err := http.NewRequest(method, base+path, strings.NewReader(body))
		require.NoError(t, err)
		for k, v := range header {
			req.Header[k] = v
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		_, err = io.Copy(io.Discard, resp.Body)
		require.NoError(t, err)
		return resp.StatusCode
	}
	token := func(user string) http.Header {
		stdout, stderr, err := runBin(env, "starter", "token", "--user", user)
		require.NoError(t, err, stderr)
		var tok struct{ Token string }
		require.NoError(t, json.Unmarshal([]byte(stdout), &tok))
		return http.Header{"Authorization": {"Bearer " + tok.Token}}
	}

	sku := "met-" + id
	require.Equal(t, http.StatusOK, call(http.MethodPut, "/api/v1/admin/skus/"+sku,
		`{"total":3,"price":1250,"buckets":2}`, http.Header{"Authorization": {"Bearer " + admin}}))
	const buyers = 5
	var users []http.Header
	for i := range buyers {
		h := token(fmt.Sprintf("met-u%d-%s", i, id))
		users = append(users, h)
		order := fmt.Sprintf("met-o%d-%s", i, id)
		body := `{"client_order_id":"` + order + `","items":[{"sku_id":"` + sku + `","quantity":1}]}`
		want := http.StatusCreated
		if i >= 3 {
			want = http.StatusConflict // SOLD_OUT
		}
		require.Equal(t, want, call(http.MethodPost, "/api/v1/orders", body, h), "buyer %d", i)
	}
	// A path with an id is counted under its route pattern.
	// The orders' ids are derived from each buyer's key.
	o0, o1 := flashsale.BuyerOrderID("met-u0-"+id, "met-o0-"+id), flashsale.BuyerOrderID("met-u1-"+id, "met-o1-"+id)
	require.Equal(t, http.StatusOK, call(http.MethodGet, "/api/v1/orders/"+o0, "", users[0]))
	stdout, stderr, err := runBin(env, "starter", "pay", "--via-api", base, "--order", o0, "--txn", "met-tx-"+id, "--amount", "1250")
	require.NoError(t, err, "stdout %s stderr %s", stdout, stderr)
	require.Equal(t, http.StatusOK, call(http.MethodPost, "/api/v1/orders/"+o1+"/cancel", "", users[1]))

	sale := map[string]string{"sku": sku}
	// The cancelled unit goes back to Redis and MySQL asynchronously (the
	// workflow's CloseOrder and ReleaseStock); the per-SKU gauges are read
	// at scrape time, cached for a second.
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		api := scrape(c, apiMetrics)
		assert.Equal(c, 1.0, value(api, "flashsale_sku_mysql_units", map[string]string{"sku": sku, "state": "sold"}))
		assert.Equal(c, 1.0, value(api, "flashsale_sku_mysql_units", map[string]string{"sku": sku, "state": "frozen"}))
		assert.Equal(c, 1.0, value(api, "flashsale_sku_mysql_units", map[string]string{"sku": sku, "state": "available"}))
		assert.Equal(c, 3.0, value(api, "flashsale_sku_total_units", sale))
		assert.Equal(c, 1.0, value(api, "flashsale_sku_redis_available_units", sale))
		assert.Equal(c, 0.0, value(api, "flashsale_sku_sold_out", sale), "the released unit cleared the flag")
		b0 := value(api, "flashsale_sku_redis_bucket_units", map[string]string{"sku": sku, "bucket": "0"})
		b1 := value(api, "flashsale_sku_redis_bucket_units", map[string]string{"sku": sku, "bucket": "1"})
		assert.Equal(c, 1.0, b0+b1, "the buckets hold the unit: %v + %v", b0, b1)
		assert.Equal(c, -1.0, value(api, "flashsale_sku_redis_bucket_units", map[string]string{"sku": sku, "bucket": "2"}))

		worker := scrape(c, workerMetrics)
		for status, n := range map[string]float64{"PENDING_PAYMENT": 3, "PAID": 1, "CANCELLED": 1, "EXPIRED": 0, "REJECTED": 0} {
			assert.Equal(c, n, value(worker, "flashsale_orders_total", map[string]string{"status": status}), status)
		}
	}, time.Minute, 200*time.Millisecond)

	// An operator's reconcile of the SKU, as the Schedule runs it: since
	// orders settle in local activities (payment-arrival version 2), the
	// reconciler's activities (and a settle's fallback) are the regular
	// activities the dashboard's activity-latency panel shows.
	stdout, stderr, err = runBin(env, "starter", "reconcile", "now", "--sku", sku, "--settle", "1s")
	require.NoError(t, err, "reconcile: stdout %s stderr %s", stdout, stderr)

	api := scrape(t, apiMetrics)
	buy := map[string]string{"route": "POST /api/v1/orders"}
	count := func(code string) float64 {
		return value(api, "flashsale_http_requests_total", map[string]string{"route": buy["route"], "code": code})
	}
	require.Equal(t, 3.0, count("201"))
	require.Equal(t, 2.0, count("409"))
	require.Equal(t, 1.0, value(api, "flashsale_http_requests_total", map[string]string{"route": "GET /api/v1/orders/{id}", "code": "200"}))
	require.Equal(t, 1.0, value(api, "flashsale_http_requests_total", map[string]string{"route": "POST /api/v1/orders/{id}/cancel", "code": "200"}))
	require.Equal(t, 5.0, value(api, "flashsale_http_request_duration_seconds", buy), "one observation per buy")
	require.Equal(t, 3.0, value(api, "flashsale_buy_duration_seconds", map[string]string{"outcome": "admitted"}))
	require.Equal(t, 2.0, value(api, "flashsale_buy_duration_seconds", map[string]string{"outcome": "shed"}))
	require.Equal(t, 3.0, value(api, "flashsale_order_placements_total", map[string]string{"result": "reserved"}))
	require.Equal(t, 3.0, value(api, "flashsale_order_workflows_started_total", nil))
	require.Equal(t, 5.0, value(api, "flashsale_edge_requests_total", nil))
	require.Equal(t, 3.0, value(api, "flashsale_edge_decisions_total", map[string]string{"decision": "admitted"}))
	// The 4th buyer found the buckets empty; the 5th the sold-out cache or
	// flag the 4th left behind.
	soldOut := value(api, "flashsale_edge_decisions_total", map[string]string{"decision": "sold_out_stock"}) +
		value(api, "flashsale_edge_decisions_total", map[string]string{"decision": "sold_out_local"}) +
		value(api, "flashsale_edge_decisions_total", map[string]string{"decision": "sold_out_redis_flag"})
	require.Equal(t, 2.0, soldOut)
	require.Equal(t, 0.0, value(api, "flashsale_edge_in_flight_units", nil))
	require.Equal(t, 1.0, value(api, "flashsale_redis_up", nil))
	for name := range api {
		require.NotContains(t, name, id, "no ids in metric names")
	}
	// No raw path or order id ever becomes a label value.
	for _, f := range api {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				require.NotContains(t, l.GetValue(), "met-o", "%s{%s}", f.GetName(), l.GetName())
			}
		}
	}
	// The API's Temporal client reports its calls (Update-with-Start,
	// signals, queries).
	require.Greater(t, value(api, "temporal_request_total", nil), 0.0)

	worker := scrape(t, workerMetrics)
	require.Greater(t, value(worker, "temporal_workflow_task_execution_latency_seconds", nil), 0.0)
	require.Greater(t, value(worker, "temporal_workflow_task_schedule_to_start_latency_seconds", nil), 0.0)
	require.Equal(t, 1.0, value(worker, "flashsale_redis_up", nil))
	// Redis and MySQL call latencies: the worker reserved through the Lua
	// script and wrote the orders; the API read the stock for its gauges.
	require.Greater(t, value(worker, "flashsale_redis_call_duration_seconds", map[string]string{"result": "ok"}), 0.0)
	require.Greater(t, value(worker, "flashsale_mysql_call_duration_seconds", map[string]string{"result": "ok"}), 0.0)
	require.Greater(t, value(api, "flashsale_redis_call_duration_seconds", map[string]string{"result": "ok"}), 0.0)
	require.Greater(t, value(api, "flashsale_mysql_call_duration_seconds", map[string]string{"kind": "query", "result": "ok"}), 0.0)

	// Every series the Grafana dashboard queries is exported by one of them
	// with the labels it matches; every metric the rules read too.
	exported := exposedNames(api)
	for n := range exposedNames(worker) {
		exported[n] = true
	}
	checkDashboard(t, api, worker)
	var missing []string
	for _, name := range ruleMetrics(t) {
		if exported[name] {
			continue
		}
		if c, ok := onlyAfterFailure[name]; ok {
			requireSDKMetric(t, c, strings.TrimSuffix(name, "_total"))
			continue
		}
		if count, ok := onlyWhileOverdue[name]; ok && exported[count] {
			continue
		}
		missing = append(missing, "rules: "+name)
	}
	// The rules' label values: the workflow type reconcile ran as above.
	require.Greater(t, value(worker, "temporal_workflow_completed_total", map[string]string{"workflow_type": "ReconcileWorkflow"}), 0.0)
	require.Equal(t, 0.0, value(worker, "flashsale_orders_stalled", nil))
	require.Equal(t, 0.0, value(worker, "flashsale_orders_overdue", nil))
	require.GreaterOrEqual(t, value(worker, "flashsale_payments_refund_required", nil), 0.0)
	require.Equal(t, 0.0, value(worker, "flashsale_backlog_read_errors", nil))
	if len(missing) > 0 {
		var all []string
		for n := range exported {
			all = append(all, n)
		}
		slices.Sort(all)
		t.Fatalf("the rules query metrics nobody exports: %v\nexported: %s", missing, strings.Join(all, " "))
	}
}

// requireSDKMetric checks the Temporal SDK in go.mod names constant as name
// (its internal/common/metrics/constants.go, read from the module cache).
func requireSDKMetric(t *testing.T, constant, name string) {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "go.temporal.io/sdk").Output()
	require.NoError(t, err)
	raw, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(out)), "internal/common/metrics/constants.go"))
	require.NoError(t, err)
	prefix := regexp.MustCompile(`TemporalMetricsPrefix\s*=\s*"([a-z_]+)"`).FindSubmatch(raw)
	require.NotNil(t, prefix, "the SDK's metric prefix")
	m := regexp.MustCompile(constant + `\s*=\s*TemporalMetricsPrefix \+ "([a-z_]+)"`).FindSubmatch(raw)
	require.NotNil(t, m, "the SDK has no %s", constant)
	require.Equal(t, name, string(prefix[1])+string(m[1]), "the SDK's %s", constant)
}
