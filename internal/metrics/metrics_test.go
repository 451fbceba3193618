package metrics_test

import (
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flashsale/flashsale/internal/metrics"
)

func TestStartDisabledWhenNoAddr(t *testing.T) {
	p, err := metrics.Start("", nil)
	require.NoError(t, err)
	require.Nil(t, p)
	p.Close() // harmless on nil
}

// TestTemporalHandlerExposition: the SDK's counters become Prometheus
// counters with _total, its timers histograms in seconds with our bounds,
// tags labels; all served as text by the listener.
func TestTemporalHandlerExposition(t *testing.T) {
	p, err := metrics.Start("127.0.0.1:0", nil)
	require.NoError(t, err)
	t.Cleanup(p.Close)

	h := p.Temporal.WithTags(map[string]string{"task_queue": "q"})
	h.Counter("temporal_request").Inc(3)
	h.Timer("temporal_workflow_task_execution_latency").Record(30 * time.Millisecond)
	h.Gauge("temporal_sticky_cache_size").Update(7)

	resp, err := http.Get("http://" + p.Addr() + metrics.Path)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	body := string(raw)
	require.Contains(t, body, "# TYPE temporal_request_total counter")
	require.Contains(t, body, `temporal_request_total{task_queue="q"} 3`)
	require.Contains(t, body, "# TYPE temporal_workflow_task_execution_latency_seconds histogram")
	// 30 ms lands in the 0.05 s bucket, not below it.
	require.Contains(t, body, `temporal_workflow_task_execution_latency_seconds_bucket{task_queue="q",le="0.025"} 0`)
	require.Contains(t, body, `temporal_workflow_task_execution_latency_seconds_bucket{task_queue="q",le="0.05"} 1`)
	require.Contains(t, body, `temporal_sticky_cache_size{task_queue="q"} 7`)
	// The process's own runtime metrics come with every registry.
	require.Contains(t, body, "go_goroutines ")
	require.False(t, strings.Contains(body, "target_info"), "no OTel resource series")

}

// Profiles are served only when asked for (METRICS_PPROF), beside the
// metrics, with block and mutex sampling on.
func TestServeProfiles(t *testing.T) {
	p, err := metrics.Start("127.0.0.1:0", nil)
	require.NoError(t, err)
	t.Cleanup(p.Close)
	status := func(path string) int {
		resp, err := http.Get("http://" + p.Addr() + path)
		require.NoError(t, err)
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode
	}
	require.Equal(t, http.StatusNotFound, status("/debug/pprof/block"))
	p.ServeProfiles()
	t.Cleanup(func() { runtime.SetBlockProfileRate(0); runtime.SetMutexProfileFraction(0) })
	require.Equal(t, 10, runtime.SetMutexProfileFraction(-1)) // -1 reads the rate
	for _, path := range []string{"/debug/pprof/block", "/debug/pprof/mutex", "/debug/pprof/goroutine", "/debug/pprof/"} {
		require.Equal(t, http.StatusOK, status(path), path)
	}
}
