//go:build integration

package edge

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/internal/inventory"
	"github.com/flashsale/flashsale/internal/redisguard"
	"github.com/flashsale/flashsale/internal/testenv"
)

// A burst larger than this instance's Redis pool is the instance's own
// overload, not a Redis outage: the buyers the pool cannot serve are told
// BUSY with a Retry-After, the guard stays closed, and nobody is sent down
// MySQL's degraded path (with its resync afterwards) while Redis is well.
// Before, a pool timeout counted as an outage: one burst opened the guard.
func TestPoolTimeoutIsBusyNotAnOutage(t *testing.T) {
	f := newFixture(t)
	f.preheat(5)
	// An instance with one Redis connection, held by a blocking read.
	small := redis.NewClient(&redis.Options{Addr: testenv.RedisAddr(), PoolSize: 1,
		PoolTimeout: 50 * time.Millisecond, MaxRetries: -1})
	t.Cleanup(func() { _ = small.Close() })
	guard := redisguard.New(redisguard.Options{Failures: 1, Cooldown: time.Hour})
	mysql := &mysqlStock{known: true}
	mysql.units.Store(5)
	g := New(small, inventory.New(small, inventory.Options{}), Options{Guard: guard, DBAvailable: mysql.available})

	ctx := context.Background()
	held := make(chan error, 1)
	go func() { held <- small.BLPop(ctx, 2*time.Second, "edge-"+f.id+"-nothing").Err() }()
	require.Eventually(t, func() bool {
		st := small.PoolStats()
		return st.TotalConns == 1 && st.IdleConns == 0
	}, 5*time.Second, time.Millisecond, "the one connection is taken")

	const buyers = 20
	errs := make([]error, buyers)
	var wg sync.WaitGroup
	for i := range buyers {
		wg.Go(func() {
			_, errs[i] = g.Admit(ctx, Request{OrderID: fmt.Sprintf("%s-o-%d", f.id, i), UserID: fmt.Sprintf("%s-u-%d", f.id, i),
				Items: []flashsale.Item{{SKU: f.sku, Quantity: 1}}})
		})
	}
	wg.Wait()
	for i, err := range errs {
		require.ErrorIs(t, err, &flashsale.Error{Code: flashsale.Busy}, "buyer %d", i)
		require.ErrorIs(t, err, redis.ErrPoolTimeout, "the cause is kept for the logs")
		re, ok := errors.AsType[*RetryError](err)
		require.True(t, ok, "buyer %d is told when to retry: %v", i, err)
		require.GreaterOrEqual(t, re.After, DefaultBusyRetryAfter)
	}
	require.True(t, guard.Up(), "an exhausted pool is not an outage")
	require.Zero(t, mysql.reads.Load(), "nobody took the degraded path")
	st := g.Stats()
	require.Zero(t, st.Degraded)
	require.Zero(t, st.Unavailable)
	require.EqualValues(t, buyers, st.Busy)

	require.ErrorIs(t, <-held, redis.Nil)
	tk, err := g.Admit(ctx, Request{OrderID: f.id + "-o-after", UserID: f.id + "-u-after",
		Items: []flashsale.Item{{SKU: f.sku, Quantity: 1}}})
	require.NoError(t, err, "with its connection back the instance admits from Redis")
	require.False(t, tk.Degraded)
	tk.Done(ctx, false)
}

// A buyer's deadline met while this instance waits for a Redis connection
// (a pool whose timeout is longer than the request's time left) is the
// same overload: BUSY with a Retry-After, the guard closed, nobody sent to
// MySQL. Before, go-redis's bare context error read as an outage, and as
// the buyer's own hang-up: 503 UNAVAILABLE at the door.
func TestPoolWaitDeadlineIsBusy(t *testing.T) {
	f := newFixture(t)
	f.preheat(5)
	small := redis.NewClient(&redis.Options{Addr: testenv.RedisAddr(), PoolSize: 1, PoolTimeout: time.Minute, MaxRetries: -1})
	small.AddHook(redisguard.PoolWaitHook()) // as backend.NewRedis does
	t.Cleanup(func() { _ = small.Close() })
	guard := redisguard.New(redisguard.Options{Failures: 1, Cooldown: time.Hour})
	mysql := &mysqlStock{known: true}
	mysql.units.Store(5)
	g := New(small, inventory.New(small, inventory.Options{}), Options{Guard: guard, DBAvailable: mysql.available})

	hold := "edge-" + f.id + "-hold"
	held := make(chan error, 1)
	go func() { held <- small.BLPop(context.Background(), time.Minute, hold).Err() }()
	require.Eventually(t, func() bool {
		st := small.PoolStats()
		return st.TotalConns == 1 && st.IdleConns == 0
	}, 5*time.Second, time.Millisecond, "the one connection is taken")

	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := g.Admit(ctx, Request{OrderID: f.id + "-o", UserID: f.id + "-u", Items: []flashsale.Item{{SKU: f.sku, Quantity: 1}}})
	require.ErrorIs(t, err, &flashsale.Error{Code: flashsale.Busy})
	require.ErrorIs(t, err, redisguard.ErrPoolWait)
	re, ok := errors.AsType[*RetryError](err)
	require.True(t, ok, "told when to retry: %v", err)
	require.GreaterOrEqual(t, re.After, DefaultBusyRetryAfter)
	require.True(t, guard.Up(), "an exhausted pool is not an outage")
	require.Zero(t, mysql.reads.Load(), "nobody took the degraded path")

	require.NoError(t, testenv.Redis(t).LPush(context.Background(), hold, "done").Err())
	require.NoError(t, <-held)
}
