//go:build integration

package backend_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/flashsale/flashsale/internal/backend"
	"github.com/flashsale/flashsale/internal/config"
	"github.com/flashsale/flashsale/internal/testenv"
)

// A redis-server of the test's own, its policy changed with CONFIG SET: only
// noeviction passes; every other policy refuses the process's start
// (Connect, which every command runs) with the policy and the fix named, and
// the override lets it start with a warning each time it is checked.
func TestEvictionPolicyGatesTheStart(t *testing.T) {
	ctx := context.Background()
	addr := testenv.RedisServer(t)
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { _ = rdb.Close() })
	require.NoError(t, backend.CheckEviction(ctx, rdb), "redis-server's default is noeviction")

	for _, policy := range []string{"allkeys-lru", "volatile-lru", "allkeys-lfu", "volatile-ttl", "allkeys-random"} {
		require.NoError(t, rdb.ConfigSet(ctx, "maxmemory-policy", policy).Err())
		err := backend.CheckEviction(ctx, rdb)
		require.True(t, backend.IsEviction(err), "%s: %v", policy, err)
		require.Equal(t, "redis maxmemory-policy is "+policy+", not noeviction (CONFIG SET maxmemory-policy noeviction, or REDIS_ALLOW_EVICTION=true)",
			backend.EvictionReasons(err))

		_, err = backend.Connect(ctx, config.Config{RedisAddr: addr}, slog.New(slog.DiscardHandler))
		require.ErrorContains(t, err, "redis "+addr+" has maxmemory-policy "+policy)
		require.ErrorContains(t, err, "CONFIG SET maxmemory-policy noeviction")
	}

	var logs testenv.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	for i := 1; i <= 3; i++ {
		require.NoError(t, backend.GateEviction(ctx, rdb, true, logger))
		require.Equal(t, i, strings.Count(logs.String(), "REDIS_ALLOW_EVICTION=true overrides the eviction check"), "warned on every check")
	}
	require.Contains(t, logs.String(), "allkeys-random")
	require.True(t, backend.IsEviction(backend.GateEviction(ctx, rdb, false, logger)))

	require.NoError(t, rdb.ConfigSet(ctx, "maxmemory-policy", "noeviction").Err())
	require.NoError(t, backend.GateEviction(ctx, rdb, false, logger))
}

// A Redis that disables CONFIG (as managed ones do) proves nothing: the
// process refuses to start unless overridden.
func TestEvictionPolicyUnprovenWhenConfigIsRefused(t *testing.T) {
	ctx := context.Background()
	addr := testenv.RedisServer(t, "--rename-command", "CONFIG", "")
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { _ = rdb.Close() })
	require.Error(t, rdb.ConfigGet(ctx, "maxmemory-policy").Err(), "CONFIG is disabled")

	err := backend.CheckEviction(ctx, rdb)
	require.True(t, backend.IsEviction(err), "%v", err)
	require.ErrorContains(t, err, "redis "+addr+" refused CONFIG GET maxmemory-policy")
	_, err = backend.Connect(ctx, config.Config{RedisAddr: addr}, slog.New(slog.DiscardHandler))
	require.ErrorContains(t, err, "not proven to be noeviction")

	var logs testenv.Buffer
	require.NoError(t, backend.GateEviction(ctx, rdb, true, slog.New(slog.NewTextHandler(&logs, nil))))
	require.Contains(t, logs.String(), "refused CONFIG GET")
}

// Unreachable is not an eviction problem: the caller reports Redis down as
// it always has.
func TestEvictionCheckOfAnUnreachableRedis(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: testenv.FreeAddr(t), MaxRetries: -1})
	t.Cleanup(func() { _ = rdb.Close() })
	err := backend.GateEviction(context.Background(), rdb, true, slog.New(slog.DiscardHandler))
	require.Error(t, err)
	require.False(t, backend.IsEviction(err))
}

// Every master of the local Redis Cluster answers noeviction (its nodes run
// deploy/redis/node.conf). The shared cluster is only read, never changed:
// other packages' tests run on it.
func TestEvictionPolicyOfEveryClusterMaster(t *testing.T) {
	ctx := context.Background()
	cc := backend.NewRedis(config.Config{RedisAddr: testenv.RedisClusterAddr(t)}).(*redis.ClusterClient)
	t.Cleanup(func() { _ = cc.Close() })
	require.NoError(t, backend.CheckEviction(ctx, cc))
	var masters atomic.Int32
	require.NoError(t, cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
		masters.Add(1)
		return c.ConfigGet(ctx, "maxmemory-policy").Err()
	}))
	require.Equal(t, int32(3), masters.Load())
}

// A cluster's problems are joined, one reason per master.
func TestEvictionReasonsOfSeveralMasters(t *testing.T) {
	err := fmt.Errorf("redis eviction policy: %w", errors.Join(
		&backend.EvictionError{Addr: "a:1", Policy: "allkeys-lru"},
		&backend.EvictionError{Addr: "b:2", Refused: errors.New("ERR unknown command")}))
	require.True(t, backend.IsEviction(err))
	require.Equal(t, "redis maxmemory-policy is allkeys-lru, not noeviction (CONFIG SET maxmemory-policy noeviction, or REDIS_ALLOW_EVICTION=true); "+
		"redis refused CONFIG GET maxmemory-policy, so noeviction is not proven (set it in redis.conf, or REDIS_ALLOW_EVICTION=true)",
		backend.EvictionReasons(err))
}
