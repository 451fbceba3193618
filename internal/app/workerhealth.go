package app

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/internal/backend"
)

// The worker's probes, on its metrics listener (it has no other):
//
//   - GET /healthz: the process answers. A liveness probe; a Temporal
//     outage must not get workers restarted, they reconnect by themselves.
//   - GET /readyz: this worker is polling its task queue and Temporal
//     answers: the task queue's description lists this worker's identity
//     among its workflow and activity pollers, seen within pollerFresh.
//     200 {"status":"ready","temporal":"up","workflow_pollers":"up",
//     "activity_pollers":"up"}; otherwise 503 {"code":"UNAVAILABLE",
//     "message":"not ready: ..."}, as the API's /readyz answers, and from the
//     moment a graceful stop begins. A Redis that may evict (its
//     maxmemory-policy is not noeviction, or it will not say, without
//     REDIS_ALLOW_EVICTION) is not ready either, naming the policy; a Redis
//     that does not answer is not the worker's readiness (its activities
//     degrade to MySQL).
const (
	// workerReadyTimeout bounds the two task-queue descriptions together.
	workerReadyTimeout = 2 * time.Second
	// pollerFresh: a poller Temporal last saw longer ago than this is
	// gone. A long poll lasts at most a minute (the server's long-poll
	// expiry), then the SDK polls again at once.
	pollerFresh = 2 * time.Minute
)

// WorkerIdentity is the identity a worker of this process polls
// taskQueue with (the SDK's own default shape, pid@host@queue), set
// explicitly so /readyz can find it among the task queue's pollers.
func WorkerIdentity(taskQueue string) string {
	host, err := os.Hostname()
	if err != nil {
		host = "unknown"
	}
	return fmt.Sprintf("%d@%s@%s", os.Getpid(), host, taskQueue)
}

type workerHealth struct {
	temporal  client.Client
	taskQueue string
	identity  string
	logger    *slog.Logger
	// eviction is backend.Backend.CheckEviction, a pass trusted for
	// backend.EvictionRecheck (backend.CachedEviction); nil skips it.
	eviction func(context.Context) error
	// polling is true from a successful Start until a stop begins.
	polling atomic.Bool
}

func (h *workerHealth) register(mux interface {
	Handle(string, http.Handler)
}) {
	mux.Handle("GET /healthz", http.HandlerFunc(h.healthz))
	mux.Handle("GET /readyz", http.HandlerFunc(h.readyz))
}

func (h *workerHealth) healthz(w http.ResponseWriter, _ *http.Request) {
	writeProbe(w, http.StatusOK, map[string]string{"status": "ok"})
}

func (h *workerHealth) readyz(w http.ResponseWriter, r *http.Request) {
	if !h.polling.Load() {
		notReady(w, "not polling (starting or stopping)")
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), workerReadyTimeout)
	defer cancel()
	kinds := []struct {
		name string
		typ  enumspb.TaskQueueType
	}{
		{"workflow_pollers", enumspb.TASK_QUEUE_TYPE_WORKFLOW},
		{"activity_pollers", enumspb.TASK_QUEUE_TYPE_ACTIVITY},
	}
	seen := make([]bool, len(kinds))
	errs := make([]error, len(kinds))
	var evictErr error
	var wg sync.WaitGroup
	for i, k := range kinds {
		wg.Go(func() { seen[i], errs[i] = h.polled(ctx, k.typ) })
	}
	if h.eviction != nil {
		wg.Go(func() { evictErr = h.eviction(ctx) })
	}
	wg.Wait()
	body := map[string]string{"status": "ready", "temporal": "up"}
	var problems []string
	for i, k := range kinds {
		switch {
		case errs[i] != nil:
			body["temporal"], body[k.name] = "unreachable", "unknown"
			h.logger.WarnContext(r.Context(), "readyz: temporal unreachable", "error", errs[i])
		case !seen[i]:
			body[k.name] = "down"
			problems = append(problems, k.name+" down")
		default:
			body[k.name] = "up"
		}
	}
	if body["temporal"] != "up" {
		problems = append([]string{"temporal unreachable"}, problems...)
	}
	if backend.IsEviction(evictErr) {
		h.logger.ErrorContext(r.Context(), "not ready: redis may evict sale keys", "error", evictErr)
		problems = append(problems, backend.EvictionReasons(evictErr))
	}
	if len(problems) > 0 {
		notReady(w, "not ready: "+strings.Join(problems, ", "))
		return
	}
	writeProbe(w, http.StatusOK, body)
}

// polled reports whether Temporal saw this worker poll the task queue's
// typ tasks within pollerFresh.
func (h *workerHealth) polled(ctx context.Context, typ enumspb.TaskQueueType) (bool, error) {
	resp, err := h.temporal.DescribeTaskQueue(ctx, h.taskQueue, typ)
	if err != nil {
		return false, fmt.Errorf("describe task queue %s: %w", h.taskQueue, err)
	}
	for _, p := range resp.GetPollers() {
		if p.GetIdentity() == h.identity && time.Since(p.GetLastAccessTime().AsTime()) < pollerFresh {
			return true, nil
		}
	}
	return false, nil
}

func notReady(w http.ResponseWriter, message string) {
	writeProbe(w, http.StatusServiceUnavailable, map[string]string{"code": string(flashsale.Unavailable), "message": message})
}

func writeProbe(w http.ResponseWriter, status int, body map[string]string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body) // a prober gone is nobody to tell
}
