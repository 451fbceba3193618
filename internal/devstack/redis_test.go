package devstack

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/internal/backend"
	"github.com/flashsale/flashsale/internal/inventory"
)

func startRedis(t *testing.T) (*Redis, *redis.Client) {
	t.Helper()
	r, err := StartRedis()
	require.NoError(t, err)
	t.Cleanup(r.Stop)
	// miniredis runs in this process, under -race, on a machine that may be
	// busy: these tests judge correctness, so a slow answer must not become
	// an i/o timeout (the default 3 s was seen exceeded on a loaded box).
	rdb := redis.NewClient(&redis.Options{Addr: r.Addr(), PoolSize: 64, ReadTimeout: time.Minute, WriteTimeout: time.Minute})
	t.Cleanup(func() { _ = rdb.Close() })
	require.NoError(t, rdb.Ping(context.Background()).Err())
	return r, rdb
}

// A flash sale through the real inventory code: preheat into 16 buckets,
// buyers racing from many goroutines until sold out, then releases and a
// restock putting units back on sale, with the flag and the Pub/Sub
// announcements a real Redis would give.
func TestRedisRunsInventory(t *testing.T) {
	ctx := context.Background()
	_, rdb := startRedis(t)
	stock := inventory.New(rdb, inventory.Options{})
	const sku, units, buckets, buyers = "hot", 500, 16, 64

	res, err := stock.Preheat(ctx, sku, units, buckets)
	require.NoError(t, err)
	require.Equal(t, inventory.PreheatResult{RedisAvailable: units, Buckets: buckets}, res)
	st, err := stock.Stock(ctx, sku)
	require.NoError(t, err)
	require.Len(t, st.PerBucket, buckets)
	for b, n := range st.PerBucket {
		// 500 = 16*31 + 4: the remainder goes to the lowest buckets.
		want := int64(31)
		if b < 4 {
			want = 32
		}
		require.Equal(t, want, n, "bucket %d", b)
	}

	// Every buyer keeps buying one unit under a fresh order id until told
	// sold out, so the sale ends only when all buckets are empty.
	var won, soldOut atomic.Int64
	var orders sync.Map
	var wg sync.WaitGroup
	start := time.Now()
	for g := range buyers {
		wg.Go(func() {
			for i := 0; ; i++ {
				id := fmt.Sprintf("o-%d-%d", g, i)
				r, err := stock.Reserve(ctx, id, sku, 1)
				if flashsale.ErrorCode(err) == flashsale.SoldOut {
					soldOut.Add(1)
					return
				}
				if !assert.NoError(t, err) {
					return
				}
				orders.Store(id, r)
				won.Add(1)
			}
		})
	}
	wg.Wait()
	t.Logf("%d reservations by %d goroutines in %s", won.Load(), buyers, time.Since(start).Round(time.Millisecond))
	require.EqualValues(t, units, won.Load(), "exactly the stock is reserved")
	require.EqualValues(t, buyers, soldOut.Load())
	st, err = stock.Stock(ctx, sku)
	require.NoError(t, err)
	require.Zero(t, st.Available)
	require.True(t, st.SoldOut, "the last probe proved every bucket empty")
	flag, err := stock.SoldOut(ctx, sku)
	require.NoError(t, err)
	require.True(t, flag)

	// A retried Reserve replays its markers instead of taking again.
	var someID string
	var someRes flashsale.Reservation
	orders.Range(func(k, v any) bool { someID, someRes = k.(string), v.(flashsale.Reservation); return false })
	again, err := stock.Reserve(ctx, someID, sku, 1)
	require.NoError(t, err)
	require.Equal(t, someRes, again)

	// Releasing announces the stock on the channel the API listens to,
	// clears the flag and is idempotent.
	sub := rdb.Subscribe(ctx, inventory.StockChangedChannel)
	t.Cleanup(func() { _ = sub.Close() })
	_, err = sub.Receive(ctx) // the subscription confirmation
	require.NoError(t, err)
	released, err := stock.Release(ctx, someID, sku)
	require.NoError(t, err)
	require.EqualValues(t, 1, released)
	select {
	case msg := <-sub.Channel():
		require.Equal(t, sku, msg.Payload)
	case <-time.After(5 * time.Second):
		t.Fatal("no message on " + inventory.StockChangedChannel)
	}
	released, err = stock.Release(ctx, someID, sku)
	require.NoError(t, err)
	require.Zero(t, released, "a second release moves nothing")
	_, err = stock.Reserve(ctx, someID, sku, 1)
	require.Equal(t, flashsale.AlreadyReleased, flashsale.ErrorCode(err), "a released order cannot take stock again")
	flag, err = stock.SoldOut(ctx, sku)
	require.NoError(t, err)
	require.False(t, flag, "units came back: the flag is cleared")

	added, err := stock.Restock(ctx, sku, "restock-1", 5)
	require.NoError(t, err)
	require.True(t, added)
	added, err = stock.Restock(ctx, sku, "restock-1", 5)
	require.NoError(t, err)
	require.False(t, added, "a repeated restock request adds nothing")
	st, err = stock.Stock(ctx, sku)
	require.NoError(t, err)
	require.EqualValues(t, 6, st.Available)

	// The units back on sale are bought, then the SKU is sold out again.
	for i := range 6 {
		_, err := stock.Reserve(ctx, fmt.Sprintf("late-%d", i), sku, 1)
		require.NoError(t, err)
	}
	_, err = stock.Reserve(ctx, "late-6", sku, 1)
	require.Equal(t, flashsale.SoldOut, flashsale.ErrorCode(err))
}

// Scripts are sent as EVALSHA; after the script cache is flushed (a Redis
// restart or failover) the inventory must fall back to loading them. Both
// paths are used: go-redis's Script.Run (EVALSHA, then EVAL) in Reserve, and
// the inventory's own pipeline reload in Release.
func TestRedisNoScriptFallback(t *testing.T) {
	ctx := context.Background()
	_, rdb := startRedis(t)
	stock := inventory.New(rdb, inventory.Options{})
	_, err := stock.Preheat(ctx, "s", 10, 4)
	require.NoError(t, err)
	_, err = stock.Reserve(ctx, "o1", "s", 3)
	require.NoError(t, err)

	require.NoError(t, rdb.ScriptFlush(ctx).Err())
	release := redis.NewScript(readScript(t, "release.lua"))
	exists, err := rdb.ScriptExists(ctx, release.Hash()).Result()
	require.NoError(t, err)
	require.Equal(t, []bool{false}, exists, "the flush emptied the script cache")
	err = release.EvalSha(ctx, rdb, []string{"k1", "k2"}, "r", 1000).Err()
	require.True(t, redis.HasErrorPrefix(err, "NOSCRIPT"), "EVALSHA of an unknown script: %v", err)

	_, err = stock.Reserve(ctx, "o2", "s", 2)
	require.NoError(t, err)
	n, err := stock.Release(ctx, "o1", "s")
	require.NoError(t, err)
	require.EqualValues(t, 3, n)
	exists, err = rdb.ScriptExists(ctx, release.Hash()).Result()
	require.NoError(t, err)
	require.Equal(t, []bool{true}, exists, "Release reloaded its script after NOSCRIPT")
	st, err := stock.Stock(ctx, "s")
	require.NoError(t, err)
	require.EqualValues(t, 8, st.Available)
}

// The scripts' less common constructs behave as on Redis: a missing key is
// false in Lua, redis.error_reply reaches the client as an error, SET
// KEEPTTL keeps the marker's TTL, and TTLs expire in real time (miniredis
// only expires keys when told to; StartRedis ages them).
func TestRedisLuaSemantics(t *testing.T) {
	ctx := context.Background()
	r, rdb := startRedis(t)

	// take.lua refuses a non-positive quantity with redis.error_reply. The
	// missing marker and stock keys must read as false, or it would fail
	// differently (or not at all) before reaching the guard.
	take := redis.NewScript(readScript(t, "take.lua"))
	err := take.Run(ctx, rdb, []string{"fs:{sku:x:b0}:stock", "fs:{sku:x:b0}:order:o"}, 0, 1000, 1000).Err()
	require.ErrorContains(t, err, "take.lua: wanted must be a positive integer")

	stock := inventory.New(rdb, inventory.Options{HeldTTL: time.Hour, SoldOutTTL: 500 * time.Millisecond})
	_, err = stock.Preheat(ctx, "k", 4, 1)
	require.NoError(t, err)
	_, err = stock.Reserve(ctx, "o1", "k", 4)
	require.NoError(t, err)
	marker := keyWith(t, r, ":order:o1")
	require.InDelta(t, time.Hour.Seconds(), r.mr.TTL(marker).Seconds(), 5, "held TTL set by SET PX")
	_, err = stock.Release(ctx, "o1", "k")
	require.NoError(t, err)
	require.InDelta(t, time.Hour.Seconds(), r.mr.TTL(marker).Seconds(), 5, "SET KEEPTTL kept the held TTL")

	// Sold out: the flag is set with a 500 ms TTL and nothing bumps it, so
	// only expiry can clear it.
	_, err = stock.Reserve(ctx, "o2", "k", 4)
	require.NoError(t, err)
	_, err = stock.Reserve(ctx, "o3", "k", 1)
	require.Equal(t, flashsale.SoldOut, flashsale.ErrorCode(err))
	flag, err := stock.SoldOut(ctx, "k")
	require.NoError(t, err)
	require.True(t, flag)
	require.Eventually(t, func() bool {
		flag, err := stock.SoldOut(ctx, "k")
		return err == nil && !flag
	}, 5*time.Second, 50*time.Millisecond, "the sold-out flag expires by itself")
}

// readScript reads one of the inventory's Lua scripts, so the test runs the
// same source the binary embeds.
func readScript(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile("../inventory/" + name)
	require.NoError(t, err)
	return string(b)
}

// keyWith finds the one key containing part.
func keyWith(t *testing.T, r *Redis, part string) string {
	t.Helper()
	var found []string
	for _, k := range r.mr.Keys() {
		if strings.Contains(k, part) {
			found = append(found, k)
		}
	}
	require.Len(t, found, 1, "keys containing %q", part)
	return found[0]
}

func TestRedisStop(t *testing.T) {
	r, err := StartRedis()
	require.NoError(t, err)
	addr := r.Addr()
	r.Stop()
	r.Stop() // idempotent
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer rdb.Close()
	require.Error(t, rdb.Ping(context.Background()).Err(), "nothing answers after Stop")
}

// Every process checks Redis's maxmemory-policy at start and refuses one
// that will not say; the embedded Redis, which never evicts, says
// noeviction, so the demo starts without the override.
func TestEmbeddedRedisSaysNoEviction(t *testing.T) {
	ctx := context.Background()
	_, rdb := startRedis(t)
	require.NoError(t, backend.CheckEviction(ctx, rdb))
	got, err := rdb.ConfigGet(ctx, "maxmemory").Result()
	require.NoError(t, err)
	require.Empty(t, got, "a parameter it does not know answers an empty map")
	require.Error(t, rdb.ConfigSet(ctx, "maxmemory-policy", "allkeys-lru").Err(), "only CONFIG GET is answered")
}
