package httpapi

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"go.temporal.io/sdk/client"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/internal/edge"
)

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	s.writeJSON(w, r, http.StatusOK, map[string]string{"status": "ok"})
}

// readyz checks, in parallel, that Temporal, Redis and MySQL answer within
// readyTimeout. The failed ones are named; why they failed is logged.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	if s.draining.Load() {
		s.writeError(w, r, refuse(flashsale.Unavailable, "shutting down"))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
	defer cancel()
	checks := []struct {
		name string
		fn   func(context.Context) error
	}{
		{"temporal", func(ctx context.Context) error {
			_, err := s.deps.Temporal.CheckHealth(ctx, &client.CheckHealthRequest{})
			return err
		}},
		{"mysql", s.deps.Store.Ping},
	}
	// Redis is not among them: without it buyers are served in degraded
	// mode (MySQL alone), and taking every instance out of the load
	// balancer would turn a slow sale into no sale. The answer says so.
	var redisErr error
	errs := make([]error, len(checks))
	var wg sync.WaitGroup
	wg.Go(func() { redisErr = s.deps.Redis.Ping(ctx).Err() })
	for i, c := range checks {
		wg.Go(func() { errs[i] = c.fn(ctx) })
	}
	wg.Wait()
	var failed []string
	for i, err := range errs {
		if err != nil {
			failed = append(failed, checks[i].name)
			s.log.WarnContext(r.Context(), "not ready", "dependency", checks[i].name, "error", err)
		}
	}
	if len(failed) > 0 {
		s.writeError(w, r, refuse(flashsale.Unavailable, "not ready: "+strings.Join(failed, ", ")+" unreachable"))
		return
	}
	if redisErr != nil {
		s.log.WarnContext(r.Context(), "redis unreachable: serving degraded", "error", redisErr)
		s.writeJSON(w, r, http.StatusOK, map[string]string{"status": "degraded", "redis": "unreachable"})
		return
	}
	s.writeJSON(w, r, http.StatusOK, map[string]string{"status": "ready"})
}

// metrics are the API's counters; /metrics adds the edge's.
type metrics struct {
	workflowsStarted atomic.Int64
	statuses         [600]atomic.Int64
}

func (m *metrics) count(status int) {
	if status == 0 {
		status = http.StatusOK
	}
	if status > 0 && status < len(m.statuses) {
		m.statuses[status].Add(1)
	}
}

// MetricsSnapshot is what GET /metrics returns.
type MetricsSnapshot struct {
	// WorkflowsStarted counts Update-with-Start calls for new orders (not
	// repeats of placed ones): an upper bound on order workflows started.
	WorkflowsStarted int64            `json:"workflows_started"`
	Responses        map[string]int64 `json:"responses"`
	Edge             edge.Stats       `json:"edge"`
}

// Metrics returns the counters since start.
func (s *Server) Metrics() MetricsSnapshot {
	out := MetricsSnapshot{WorkflowsStarted: s.metrics.workflowsStarted.Load(), Responses: map[string]int64{}, Edge: s.gate.Stats()}
	for code := range s.metrics.statuses {
		if n := s.metrics.statuses[code].Load(); n > 0 {
			out.Responses[strconv.Itoa(code)] = n
		}
	}
	return out
}

func (s *Server) getMetrics(w http.ResponseWriter, r *http.Request) {
	s.writeJSON(w, r, http.StatusOK, s.Metrics())
}
