//go:build integration

package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/flashsale/flashsale/internal/testenv"
)

// TestProcessesRefuseARedisThatMayEvict runs the real starter, worker and
// api binaries on a redis-server of the test's own whose policy is
// allkeys-lru (the shared Redis must keep noeviction under other tests):
// each exits at start naming the policy and the fix; with
// REDIS_ALLOW_EVICTION=true the starter connects and warns.
func TestProcessesRefuseARedisThatMayEvict(t *testing.T) {
	bin := testenv.BuildCommands(t, "", ".", "../worker", "../api")
	addr := testenv.RedisServer(t)
	admin := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { _ = admin.Close() })
	require.NoError(t, admin.ConfigSet(context.Background(), "maxmemory-policy", "allkeys-lru").Err())
	env := []string{
		"PATH=" + os.Getenv("PATH"),
		"REDIS_ADDR=" + addr,
		"MYSQL_DSN=" + testenv.MySQLDSN(t),
		"TEMPORAL_ADDRESS=" + testenv.TemporalAddress(),
		"TASK_QUEUE=evict-" + testenv.UniqueID(t),
		"WEBHOOK_SECRET=0123456789abcdef0123", "ADMIN_TOKEN=0123456789abcdef0123", "BUYER_JWT_SECRET=0123456789abcdef0123456789abcdef",
		"HTTP_ADDR=" + testenv.FreeAddr(t),
	}
	run := func(t *testing.T, env []string, name string, args ...string) (string, error) {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		_, stderr, err := testenv.RunCommand(ctx, env, bin, name, args...)
		require.NoError(t, ctx.Err(), "%s did not exit: %s", name, stderr)
		return string(stderr), err
	}
	for _, c := range []struct {
		name string
		args []string
	}{
		{"starter", []string{"stock", "--sku", "sku-1"}},
		{"worker", nil},
		{"api", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			stderr, err := run(t, env, c.name, c.args...)
			var exit *exec.ExitError
			require.True(t, errors.As(err, &exit), "%s exits: %v: %s", c.name, err, stderr)
			require.NotZero(t, exit.ExitCode())
			require.Contains(t, stderr, "redis "+addr+" has maxmemory-policy allkeys-lru", stderr)
			require.Contains(t, stderr, "CONFIG SET maxmemory-policy noeviction", stderr)
		})
	}
	t.Run("overridden", func(t *testing.T) {
		stderr, err := run(t, append(env, "REDIS_ALLOW_EVICTION=true"), "starter", "stock", "--sku", testenv.UniqueID(t))
		var exit *exec.ExitError
		require.True(t, errors.As(err, &exit), "%v: %s", err, stderr)
		require.Equal(t, exitRefused, exit.ExitCode(), stderr)
		require.Contains(t, stderr, "UNKNOWN_SKU", "connected, then answered")
		require.Contains(t, stderr, "REDIS_ALLOW_EVICTION=true overrides the eviction check")
		require.True(t, strings.Contains(stderr, "allkeys-lru"), stderr)
	})
}
