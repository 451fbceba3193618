//go:build integration

package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flashsale/flashsale/internal/testenv"
)

// TestWorkerHealth runs the real worker binary with its metrics listener
// and Temporal behind a relay: /readyz is 200 once its pollers are seen
// polling, and 503 UNAVAILABLE naming Temporal once the relay is cut,
// while /healthz stays 200 (a Temporal outage is no reason to restart a
// worker).
func TestWorkerHealth(t *testing.T) {
	s := newServices(t, time.Minute)
	relay, cut := testenv.Relay(t, testenv.TemporalAddress())
	metrics := testenv.FreeAddr(t)
	// Later entries win in exec's environment.
	s.env = append(s.env, "TEMPORAL_ADDRESS="+relay, "METRICS_ADDR="+metrics)
	w := s.startWorkerProcess()

	probe := func(c require.TestingT, path string) (int, map[string]string) {
		client := http.Client{Timeout: 5 * time.Second}
		resp, err := client.Get("http://" + metrics + path)
		require.NoError(c, err)
		defer resp.Body.Close()
		raw, err := io.ReadAll(resp.Body)
		require.NoError(c, err)
		require.Equal(c, "application/json", resp.Header.Get("Content-Type"))
		var body map[string]string
		require.NoError(c, json.Unmarshal(raw, &body), "%s", raw)
		return resp.StatusCode, body
	}

	code, body := probe(t, "/healthz")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, map[string]string{"status": "ok"}, body)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		code, body := probe(c, "/readyz")
		assert.Equal(c, http.StatusOK, code, "%v", body)
		assert.Equal(c, map[string]string{"status": "ready", "temporal": "up", "workflow_pollers": "up", "activity_pollers": "up"}, body)
	}, 30*time.Second, 200*time.Millisecond)
	// compose's health check: the binary asks its own /readyz.
	healthcheck := func() error {
		cmd := exec.Command(filepath.Join(bin, "worker"), "-healthcheck")
		cmd.Env = []string{"METRICS_ADDR=" + metrics}
		return cmd.Run()
	}
	require.NoError(t, healthcheck())

	cut()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		code, body := probe(c, "/readyz")
		assert.Equal(c, http.StatusServiceUnavailable, code, "%v", body)
		assert.Equal(c, "UNAVAILABLE", body["code"])
		assert.Contains(c, body["message"], "temporal unreachable")
	}, 30*time.Second, 200*time.Millisecond)
	code, body = probe(t, "/healthz")
	require.Equal(t, http.StatusOK, code, "alive without Temporal")
	require.Equal(t, map[string]string{"status": "ok"}, body)
	require.Error(t, healthcheck(), "worker -healthcheck fails while Temporal is unreachable")
	require.NoError(t, w.exited(), "the worker keeps running")
}
