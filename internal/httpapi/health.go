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
	"github.com/flashsale/flashsale/internal/backend"
	"github.com/flashsale/flashsale/internal/edge"
)

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	s.writeJSON(w, r, http.StatusOK, map[string]string{"status": "ok"})
}

// Dependency states in /readyz's answer.
const (
	depUp          = "up"
	depUnreachable = "unreachable"
)

// readyz checks, in parallel, that Temporal, Redis and MySQL answer within
// readyTimeout, and answers per duty: what this instance can still do
// decides whether a load balancer keeps it, and the body names each
// dependency's state (why one failed is logged).
//
//   - MySQL down: 503. MySQL is the truth every answer ends at (orders,
//     degraded ones included, payments, order reads, stock); an instance
//     that cannot reach it answers nothing a buyer needs, and one that can
//     should get the traffic.
//   - Redis down: 200 "degraded". Buyers are served in degraded mode
//     (MySQL alone); pulling every instance would turn a slow sale into no
//     sale.
//   - Temporal down: 200 "degraded". New orders answer 503 UNAVAILABLE,
//     but sold-out answers, stock reads, order reads and late payments are
//     answered from Redis and MySQL, and every instance shares one Temporal:
//     failing readiness would pull them all at once.
//   - Redis may evict (its maxmemory-policy is not noeviction, or it will
//     not say, and REDIS_ALLOW_EVICTION is not set): 503 naming the policy.
//     Such a Redis answers, but at the first memory pressure it drops stock
//     or markers mid-sale; no buyer should be served on it, and an
//     operator fixes it with one CONFIG SET.
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
		{"mysql", s.deps.Store.Ping},
		{"redis", func(ctx context.Context) error { return s.deps.Redis.Ping(ctx).Err() }},
		{"temporal", func(ctx context.Context) error {
			_, err := s.deps.Temporal.CheckHealth(ctx, &client.CheckHealthRequest{})
			return err
		}},
		{"redis_eviction", func(ctx context.Context) error {
			if s.deps.RedisEviction == nil {
				return nil
			}
			return s.deps.RedisEviction(ctx)
		}},
	}
	errs := make([]error, len(checks))
	var wg sync.WaitGroup
	for i, c := range checks {
		wg.Go(func() { errs[i] = c.fn(ctx) })
	}
	wg.Wait()
	body := map[string]string{"status": "ready"}
	var failed []string
	evictErr := errs[len(errs)-1]
	checks, errs = checks[:len(checks)-1], errs[:len(errs)-1]
	for i, err := range errs {
		name := checks[i].name
		body[name] = depUp
		if err != nil {
			body[name] = depUnreachable
			failed = append(failed, name)
			s.log.WarnContext(r.Context(), "dependency unreachable", "dependency", name, "error", err)
		}
	}
	switch {
	case backend.IsEviction(evictErr):
		s.log.ErrorContext(r.Context(), "not ready: redis may evict sale keys", "error", evictErr)
		s.writeError(w, r, refuse(flashsale.Unavailable, "not ready: "+backend.EvictionReasons(evictErr)))
	case body["mysql"] != depUp:
		s.writeError(w, r, refuse(flashsale.Unavailable, "not ready: "+strings.Join(failed, ", ")+" unreachable"))
	case len(failed) > 0:
		body["status"] = "degraded"
		s.writeJSON(w, r, http.StatusOK, body)
	default:
		s.writeJSON(w, r, http.StatusOK, body)
	}
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
