//go:build scaleout

package scaleout

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/temporalproto"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/converter"

	"github.com/flashsale/flashsale/workflows"
)

// uiURL is the cluster's Temporal Web UI (TEMPORAL_UI_URL of cluster.sh env).
var uiURL string

// uiGet fetches path from the Web UI and returns status, content type and
// body.
func uiGet(ctx context.Context, path string) (int, string, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, uiURL+path, nil)
	if err != nil {
		return 0, "", nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", nil, fmt.Errorf("GET %s: %w", path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, "", nil, fmt.Errorf("GET %s: read body: %w", path, err)
	}
	return resp.StatusCode, resp.Header.Get("Content-Type"), body, nil
}

// startScript is the SvelteKit entry the UI's index page preloads.
var startScript = regexp.MustCompile(`"(/_app/immutable/entry/start\.[A-Za-z0-9_-]+\.js)"`)

// checkUIServes proves the process on TEMPORAL_UI_URL is the Temporal Web UI
// serving its embedded app. Its index handler answers 200 to any path, so a
// 200 alone proves little: the page must be the UI's app shell, the script
// it loads must be served, a made-up asset must not be, and /api/v1/settings
// must answer with the UI's version and flashsale's namespace. It reports
// whether all of that held.
func checkUIServes(t *testing.T, ctx context.Context, namespace string) bool {
	t.Helper()
	code, ctype, body, err := uiGet(ctx, "/")
	if err != nil {
		t.Errorf("web UI index: %v", err)
		return false
	}
	if code != http.StatusOK || !strings.HasPrefix(ctype, "text/html") || !strings.Contains(string(body), "__sveltekit") {
		t.Errorf("web UI index: %d %s, not the UI's app shell: %.300s", code, ctype, body)
		return false
	}
	ok := true
	if m := startScript.FindSubmatch(body); m == nil {
		t.Errorf("web UI index preloads no /_app/immutable/entry/start.*.js: %.600s", body)
		ok = false
	} else if code, ctype, _, err = uiGet(ctx, string(m[1])); err != nil || code != http.StatusOK || !strings.Contains(ctype, "javascript") {
		t.Errorf("web UI script %s: %d %s %v", m[1], code, ctype, err)
		ok = false
	}
	if code, _, _, err = uiGet(ctx, "/_app/immutable/entry/no-such-file.js"); err != nil || code != http.StatusNotFound {
		t.Errorf("web UI made-up asset: %d %v, want 404", code, err)
		ok = false
	}
	code, _, body, err = uiGet(ctx, "/api/v1/settings")
	var settings struct {
		Version          string
		DefaultNamespace string
	}
	if err != nil || code != http.StatusOK {
		t.Errorf("web UI settings: %d %v: %s", code, err, body)
		return false
	}
	if err := json.Unmarshal(body, &settings); err != nil {
		t.Errorf("web UI settings: %v: %s", err, body)
		return false
	}
	if settings.Version == "" || settings.DefaultNamespace != namespace {
		t.Errorf("web UI settings: version %q, default namespace %q (want %q)", settings.Version, settings.DefaultNamespace, namespace)
		ok = false
	}
	return ok
}

// uiWorkflow is one execution as the Web UI lists it.
type uiWorkflow struct {
	Status      enumspb.WorkflowExecutionStatus
	OrderStatus string
}

// uiList runs a visibility query through the Web UI's HTTP API (the
// grpc-gateway in front of the frontend's ListWorkflowExecutions, the call
// the UI's workflow list makes) and returns the executions by workflow id.
func uiList(ctx context.Context, namespace, query string) (map[string]uiWorkflow, error) {
	path := "/api/v1/namespaces/" + url.PathEscape(namespace) + "/workflows?" +
		url.Values{"query": {query}, "pageSize": {"1000"}}.Encode()
	code, _, body, err := uiGet(ctx, path)
	if err != nil {
		return nil, err
	}
	if code != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %d %s", path, code, body)
	}
	var resp workflowservice.ListWorkflowExecutionsResponse
	if err := (temporalproto.CustomJSONUnmarshalOptions{}).Unmarshal(body, &resp); err != nil {
		return nil, fmt.Errorf("GET %s: decode: %w: %.300s", path, err, body)
	}
	out := map[string]uiWorkflow{}
	for _, e := range resp.GetExecutions() {
		w := uiWorkflow{Status: e.GetStatus()}
		if p := e.GetSearchAttributes().GetIndexedFields()[workflows.OrderStatusKey.GetName()]; p != nil {
			if err := converter.GetDefaultDataConverter().FromPayload(p, &w.OrderStatus); err != nil {
				return nil, fmt.Errorf("%s: decode OrderStatus: %w", e.GetExecution().GetWorkflowId(), err)
			}
		}
		out[e.GetExecution().GetWorkflowId()] = w
	}
	return out, nil
}

// checkUISeesSale asserts the Web UI shows the sale as Temporal and MySQL
// hold it: every order of db listed under the SKU (SkuIds) with its
// OrderStatus search attribute equal to MySQL's status and the workflow
// closed; and one paid order, looked up by its workflow id, with the status
// the frontend itself reports for it. Visibility is eventually consistent,
// so the lists are read again until they agree or a minute has passed.
// It reports whether everything agreed.
func checkUISeesSale(t *testing.T, ctx context.Context, sku string, db map[string]string) bool {
	t.Helper()
	namespace := os.Getenv("TEMPORAL_NAMESPACE")
	if !checkUIServes(t, ctx, namespace) {
		return false
	}

	ids := make([]string, 0, len(db))
	for id := range db {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	paid := slices.IndexFunc(ids, func(id string) bool { return db[id] == "PAID" })
	if paid < 0 {
		t.Errorf("no PAID order among %d to look up in the web UI", len(ids))
		return false
	}
	one := workflows.OrderWorkflowID(ids[paid])

	d, closeDeps, err := deps(ctx)
	if err != nil {
		t.Errorf("connect: %v", err)
		return false
	}
	defer closeDeps()
	desc, err := d.Temporal.DescribeWorkflow(ctx, one, "")
	if err != nil {
		t.Errorf("describe %s on the frontend: %v", one, err)
		return false
	}
	want := desc.RawResponse.GetWorkflowExecutionInfo().GetStatus()

	var problems []string
	deadline := time.Now().Add(time.Minute)
	for {
		problems = nil
		byID, err := uiList(ctx, namespace, fmt.Sprintf("WorkflowId = %q", one))
		if err != nil {
			problems = append(problems, err.Error())
		} else if w, ok := byID[one]; !ok || w.Status != want || w.OrderStatus != "PAID" {
			problems = append(problems, fmt.Sprintf("%s: web UI lists %+v (found %v), the frontend says %s, MySQL PAID", one, w, ok, want))
		}
		bySKU, err := uiList(ctx, namespace, fmt.Sprintf("%s = %q", workflows.SKUIDsKey.GetName(), sku))
		if err != nil {
			problems = append(problems, err.Error())
		}
		for _, id := range ids {
			w, ok := bySKU[workflows.OrderWorkflowID(id)]
			if err == nil && (!ok || w.OrderStatus != db[id] || w.Status == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING) {
				problems = append(problems, fmt.Sprintf("order %s: web UI lists %+v (found %v), MySQL %s", id, w, ok, db[id]))
			}
		}
		if len(problems) == 0 {
			t.Logf("web UI %s lists %s as %s (the frontend agrees) and all %d orders of %s with MySQL's status (%d executions of the SKU)",
				uiURL, one, want, len(ids), sku, len(bySKU))
			return true
		}
		if time.Now().After(deadline) {
			break
		}
		time.Sleep(2 * time.Second)
	}
	for _, p := range problems {
		t.Errorf("web UI: %s", p)
	}
	return false
}
