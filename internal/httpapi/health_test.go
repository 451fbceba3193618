//go:build integration

package httpapi_test

import (
	"context"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/flashsale/flashsale/internal/backend"
	"github.com/flashsale/flashsale/internal/httpapi"
	"github.com/flashsale/flashsale/internal/inventory"
	"github.com/flashsale/flashsale/internal/orderdb"
	"github.com/flashsale/flashsale/internal/testenv"
)

// TestReadinessPerDuty points each dependency of an API instance at a
// closed port and reads /readyz: only MySQL down takes the instance out of
// a load balancer (503); Redis or Temporal down leaves it in, degraded,
// with the body naming each dependency's state.
func TestReadinessPerDuty(t *testing.T) {
	s := newStack(t, stackOptions{})
	closedRedis := func() redis.UniversalClient {
		c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: 100 * time.Millisecond})
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	closedTemporal := func() client.Client {
		c, err := client.NewLazyClient(client.Options{HostPort: "127.0.0.1:1"})
		require.NoError(t, err)
		t.Cleanup(c.Close)
		return c
	}
	closedMySQL := func() *orderdb.Store {
		cfg, err := mysql.ParseDSN(s.cfg.MySQLDSN)
		require.NoError(t, err)
		addr, stop := testenv.Relay(t, cfg.Addr)
		cfg.Addr = addr
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		store, err := orderdb.Open(ctx, cfg.FormatDSN())
		require.NoError(t, err)
		t.Cleanup(func() { _ = store.Close() })
		// From now on the store's address refuses connections.
		stop()
		return store
	}
	readyz := func(t *testing.T, change func(d *httpapi.Deps)) response {
		t.Helper()
		d := deps(t, s.b)
		change(&d)
		api, err := httpapi.New(d, s.apiConfig())
		require.NoError(t, err)
		return startInstance(t, api, false).call(http.MethodGet, "/readyz", nil, nil)
	}

	t.Run("temporal down", func(t *testing.T) {
		r := readyz(t, func(d *httpapi.Deps) { d.Temporal = closedTemporal() })
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		require.Equal(t, map[string]any{"status": "degraded", "temporal": "unreachable", "redis": "up", "mysql": "up"}, r.json(t))
	})
	t.Run("redis down", func(t *testing.T) {
		r := readyz(t, func(d *httpapi.Deps) {
			d.Redis = closedRedis()
			d.Stock = inventory.New(d.Redis, inventory.Options{})
		})
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		require.Equal(t, map[string]any{"status": "degraded", "temporal": "up", "redis": "unreachable", "mysql": "up"}, r.json(t))
	})
	t.Run("mysql down", func(t *testing.T) {
		r := readyz(t, func(d *httpapi.Deps) { d.Store = closedMySQL() })
		require.Equal(t, http.StatusServiceUnavailable, r.status, "%s", r.body)
		require.Equal(t, "UNAVAILABLE", r.code(t))
		require.Contains(t, string(r.body), "mysql unreachable")
	})
	t.Run("mysql and redis down", func(t *testing.T) {
		r := readyz(t, func(d *httpapi.Deps) {
			d.Store = closedMySQL()
			d.Redis = closedRedis()
			d.Stock = inventory.New(d.Redis, inventory.Options{})
		})
		require.Equal(t, http.StatusServiceUnavailable, r.status, "%s", r.body)
		require.Contains(t, string(r.body), "mysql, redis unreachable")
	})
}

// TestReadinessRefusesARedisThatMayEvict runs API instances on a
// redis-server of the test's own (the shared one's policy must not change
// under other tests) and changes its maxmemory-policy: allkeys-lru fails
// /readyz naming the policy and the fix, and refuses another process's
// start; REDIS_ALLOW_EVICTION lets one start and stay ready, warning each
// time; back to noeviction, ready again. A passing verdict costs one CONFIG
// GET per 30 s, not one per probe; a failing one is checked at every probe.
func TestReadinessRefusesARedisThatMayEvict(t *testing.T) {
	ctx := context.Background()
	s := newStack(t, stackOptions{})
	addr := testenv.RedisServer(t)
	admin := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { _ = admin.Close() })
	cfg := s.cfg
	cfg.RedisAddr = addr
	serve := func(b *backend.Backend) *instance {
		api, err := httpapi.New(deps(t, b), s.apiConfig())
		require.NoError(t, err)
		return startInstance(t, api, false)
	}
	ready := map[string]any{"status": "ready", "temporal": "up", "redis": "up", "mysql": "up"}

	// CONFIG GETs the server has answered (the test's own server: nobody
	// else asks it).
	configGets := func() int64 {
		info, err := admin.Info(ctx, "commandstats").Result()
		require.NoError(t, err)
		for _, l := range strings.Split(info, "\n") {
			if rest, ok := strings.CutPrefix(strings.TrimSpace(l), "cmdstat_config|get:calls="); ok {
				n, err := strconv.ParseInt(rest[:strings.IndexByte(rest, ',')], 10, 64)
				require.NoError(t, err)
				return n
			}
		}
		return 0
	}

	b := s.sys.Connect(cfg, testLogger())
	strict := serve(b)
	before := configGets()
	for range 2 {
		r := strict.call(http.MethodGet, "/readyz", nil, nil)
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		require.Equal(t, ready, r.json(t))
	}
	require.Equal(t, before+1, configGets(), "a passing verdict is trusted for 30 s: two probes, one CONFIG GET")

	require.NoError(t, admin.ConfigSet(ctx, "maxmemory-policy", "allkeys-lru").Err())
	// strict may trust its pass for up to 30 s more; an instance that has
	// none checks at its first probe, and again at every probe while the
	// verdict fails.
	fresh := serve(b)
	before = configGets()
	for range 2 {
		r := fresh.call(http.MethodGet, "/readyz", nil, nil)
		require.Equal(t, http.StatusServiceUnavailable, r.status, "%s", r.body)
		require.Equal(t, "UNAVAILABLE", r.code(t))
		require.Equal(t, "not ready: redis maxmemory-policy is allkeys-lru, not noeviction (CONFIG SET maxmemory-policy noeviction, or REDIS_ALLOW_EVICTION=true)",
			r.json(t)["message"])
	}
	require.Equal(t, before+2, configGets(), "a failing verdict is checked again at the next probe")
	_, err := backend.Connect(ctx, cfg, testLogger())
	require.ErrorContains(t, err, "has maxmemory-policy allkeys-lru")

	var logs testenv.Buffer
	overridden := cfg
	overridden.RedisAllowEviction = true
	loose := serve(s.sys.Connect(overridden, slog.New(slog.NewTextHandler(&logs, nil))))
	const warning = "REDIS_ALLOW_EVICTION=true overrides the eviction check"
	require.Equal(t, 1, strings.Count(logs.String(), warning), "warned at start")
	r := loose.call(http.MethodGet, "/readyz", nil, nil)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	require.Equal(t, ready, r.json(t))
	require.Equal(t, 2, strings.Count(logs.String(), warning), "warned at the readiness check")

	require.NoError(t, admin.ConfigSet(ctx, "maxmemory-policy", "noeviction").Err())
	r = fresh.call(http.MethodGet, "/readyz", nil, nil)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	require.Equal(t, ready, r.json(t), "fixed, ready at the next probe")
}
