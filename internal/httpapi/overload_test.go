//go:build integration

package httpapi_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/flashsale/flashsale/internal/httpapi"
	"github.com/flashsale/flashsale/internal/inventory"
	"github.com/flashsale/flashsale/internal/testenv"
)

// An API instance whose Redis pool is exhausted is overloaded, not cut off
// from Redis: a buy that cannot get a connection in time answers 429 BUSY
// with Retry-After (retry shortly), never 503 UNAVAILABLE, and takes
// nothing: no order, no unit, no workflow.
func TestPoolWaitIsBusyAtTheDoor(t *testing.T) {
	s := newStack(t, stackOptions{})
	sku := s.name("pool")
	s.api.putSKU(sku, 5, 100, 2, 1)

	// One connection, held by a blocking read of a key nobody writes
	// until the buys are answered.
	small := redis.NewClient(&redis.Options{Addr: testenv.RedisAddr(), PoolSize: 1,
		PoolTimeout: 50 * time.Millisecond, MaxRetries: -1})
	t.Cleanup(func() { _ = small.Close() })
	d := deps(t, s.b)
	d.Redis = small
	d.Stock = inventory.New(small, inventory.Options{})
	api, err := httpapi.New(d, s.apiConfig())
	require.NoError(t, err)
	in := startInstance(t, api, false)

	ctx := context.Background()
	hold := s.name("hold")
	held := make(chan error, 1)
	go func() { held <- small.BLPop(ctx, time.Minute, hold).Err() }()
	require.Eventually(t, func() bool {
		st := small.PoolStats()
		return st.TotalConns == 1 && st.IdleConns == 0
	}, 5*time.Second, time.Millisecond, "the one connection is taken")

	for i, key := range []string{"k1", "k2", ""} {
		r := in.buy(key, s.name("u"), sku, 1)
		require.Equal(t, http.StatusTooManyRequests, r.status, "buy %d: %s", i, r.body)
		require.Equal(t, "BUSY", r.code(t), "buy %d", i)
		require.NotEmpty(t, r.header.Get("Retry-After"), "buy %d", i)
	}
	require.NoError(t, testenv.Redis(t).LPush(ctx, hold, "done").Err())
	require.NoError(t, <-held)
	require.EqualValues(t, 5, s.dbInventory(sku).Available, "no unit taken in MySQL")
	require.EqualValues(t, 5, s.api.inventory(sku).Available, "nor in Redis")
	require.Zero(t, s.countWorkflows(sku), "no order started")
}
