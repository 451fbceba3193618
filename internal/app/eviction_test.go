//go:build integration

package app

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flashsale/flashsale/internal/backend"
	"github.com/flashsale/flashsale/internal/config"
	"github.com/flashsale/flashsale/internal/testenv"
)

// The worker's /readyz on a redis-server of the test's own: ready while it
// polls and Redis says noeviction, not ready naming the policy once it is
// allkeys-lru, ready again at noeviction.
func TestWorkerNotReadyOnARedisThatMayEvict(t *testing.T) {
	ctx := context.Background()
	addr := testenv.RedisServer(t)
	admin := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { _ = admin.Close() })
	cfg := config.Config{
		TemporalAddress: testenv.TemporalAddress(), TemporalNamespace: config.DefaultNamespace,
		TaskQueue: "evict-" + testenv.UniqueID(t), RedisAddr: addr, MySQLDSN: testenv.MySQLDSN(t),
		PaymentTimeout: 15 * time.Minute, WorkerConcurrency: 4,
	}
	logger := slog.New(slog.DiscardHandler)
	b, err := backend.Connect(ctx, cfg, logger)
	require.NoError(t, err)
	t.Cleanup(b.Close)
	w := NewWorker(b)
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)
	h := &workerHealth{temporal: b.Temporal, taskQueue: cfg.TaskQueue, identity: WorkerIdentity(cfg.TaskQueue),
		logger: logger, eviction: b.CheckEviction}
	h.polling.Store(true)
	readyz := func() (int, map[string]string) {
		rec := httptest.NewRecorder()
		h.readyz(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
		var body map[string]string
		require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &body), "%s", rec.Body)
		return rec.Code, body
	}
	ready := map[string]string{"status": "ready", "temporal": "up", "workflow_pollers": "up", "activity_pollers": "up"}
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		code, body := readyz()
		assert.Equal(c, http.StatusOK, code, "%v", body)
		assert.Equal(c, ready, body)
	}, 30*time.Second, 200*time.Millisecond)

	require.NoError(t, admin.ConfigSet(ctx, "maxmemory-policy", "allkeys-lru").Err())
	code, body := readyz()
	require.Equal(t, http.StatusServiceUnavailable, code, "%v", body)
	require.Equal(t, map[string]string{"code": "UNAVAILABLE",
		"message": "not ready: redis maxmemory-policy is allkeys-lru, not noeviction (CONFIG SET maxmemory-policy noeviction, or REDIS_ALLOW_EVICTION=true)"}, body)

	require.NoError(t, admin.ConfigSet(ctx, "maxmemory-policy", "noeviction").Err())
	code, body = readyz()
	require.Equal(t, http.StatusOK, code, "%v", body)
	require.Equal(t, ready, body)
}
