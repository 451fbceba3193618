//go:build integration

package activities_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/activities"
	"github.com/flashsale/flashsale/activities/contract"
	"github.com/flashsale/flashsale/internal/inventory"
	"github.com/flashsale/flashsale/internal/redisguard"
	"github.com/flashsale/flashsale/internal/testenv"
)

// deadRedis returns a client for an address where nothing listens: every
// call fails at once with "connection refused", like a Redis that is down.
func deadRedis(t *testing.T) *redis.Client {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: testenv.FreeAddr(t), DialTimeout: 200 * time.Millisecond, MaxRetries: -1})
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// resyncRequests records RequestResync calls.
type resyncRequests struct {
	mu   sync.Mutex
	skus []string
}

func (r *resyncRequests) request(_ context.Context, sku string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.skus = append(r.skus, sku)
	return nil
}

func (r *resyncRequests) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.skus)
}

// worker returns order activities on the fixture's MySQL and the given
// Redis, as one worker process would hold them.
func (f *reconcileFixture) worker(rdb *redis.Client, req *resyncRequests, guard *redisguard.Guard) *activities.Activities {
	return &activities.Activities{
		Stock: inventory.New(rdb, inventory.Options{}), Orders: f.orders,
		Logger:         slog.New(slog.NewTextHandler(io.Discard, nil)),
		PaymentTimeout: 15 * time.Minute, Guard: guard,
		DegradedConcurrency: 2, RequestResync: req.request,
	}
}

func (f *reconcileFixture) place(t *testing.T, acts *activities.Activities, orderID, sku string) contract.ReserveStockResult {
	t.Helper()
	ctx := context.Background()
	items := []flashsale.Item{{SKU: sku, Quantity: 1}}
	res, err := acts.ReserveStock(ctx, contract.ReserveStockInput{OrderID: orderID, Items: items})
	require.NoError(t, err)
	_, err = acts.CreateOrder(ctx, contract.CreateOrderInput{Order: flashsale.Order{OrderID: orderID, UserID: "u-" + orderID, Items: items},
		Degraded: res.Degraded})
	require.NoError(t, err)
	return res
}

func (f *reconcileFixture) redisUnits(t *testing.T, sku string) int64 {
	t.Helper()
	st, err := f.stock.Stock(context.Background(), sku)
	require.NoError(t, err)
	return st.Available
}

// A sale through a Redis outage: orders before it take from Redis, orders
// during it are reserved in MySQL alone, some of each close, and once Redis
// is back the resync makes its buckets equal MySQL's available units
// exactly, after which orders use Redis again.
func init() {
	// The dead Redis makes go-redis log every failed dial.
	redis.SetLogger(quietRedisLogger{})
}

type quietRedisLogger struct{}

func (quietRedisLogger) Printf(context.Context, string, ...any) {}

func TestRedisOutageDegradesThenResyncs(t *testing.T) {
	ctx := context.Background()
	f := newReconcileFixture(t)
	sku := f.sku(t, "outage", 10, 10)
	req := &resyncRequests{}
	up := f.worker(f.rdb, req, nil)
	down := f.worker(deadRedis(t), req, nil)

	// Before the outage: two orders take from Redis.
	for _, id := range []string{"pre-1", "pre-2"} {
		require.False(t, f.place(t, up, f.prefix+id, sku).Degraded)
	}
	require.EqualValues(t, 8, f.redisUnits(t, sku))

	// Redis goes away. pre-1 expires: MySQL takes its unit back, its Redis
	// release has to wait.
	_, err := down.CloseOrder(ctx, contract.CloseOrderInput{OrderID: f.prefix + "pre-1", Status: "EXPIRED", Reason: "t"})
	require.NoError(t, err)
	_, err = down.ReleaseStock(ctx, contract.ReleaseStockInput{OrderID: f.prefix + "pre-1", Items: []flashsale.Item{{SKU: sku, Quantity: 1}}})
	require.Error(t, err, "redis is down")
	require.Zero(t, req.count(), "normal orders never ask for a resync")

	// Four buyers are served by MySQL alone; one of them cancels.
	for i := range 4 {
		res := f.place(t, down, fmt.Sprintf("%sdeg-%d", f.prefix, i), sku)
		require.True(t, res.Degraded)
		require.NotEmpty(t, res.DegradedReason)
	}
	_, err = down.CloseOrder(ctx, contract.CloseOrderInput{OrderID: f.prefix + "deg-0", Status: "CANCELLED", Reason: "t"})
	require.NoError(t, err)
	require.Equal(t, 5, req.count(), "four degraded creates and one degraded close each ask")

	inv, err := f.orders.Inventory(ctx, sku)
	require.NoError(t, err)
	require.EqualValues(t, 10-2-4+1+1, inv.Available)
	require.EqualValues(t, 5, inv.RedisResync)

	// Redis is back, but the SKU awaits its resync: orders stay MySQL-only.
	// (A fresh worker: up cached "not flagged" a moment ago, and may use
	// that answer for resyncFlagTTL; harmless, see degraded.go.)
	back := f.worker(f.rdb, req, nil)
	require.True(t, f.place(t, back, f.prefix+"between", sku).Degraded)
	// pre-1's release finally lands, and so does deg-0's (it held nothing).
	for _, id := range []string{"pre-1", "deg-0"} {
		_, err = up.ReleaseStock(ctx, contract.ReleaseStockInput{OrderID: f.prefix + id, Items: []flashsale.Item{{SKU: sku, Quantity: 1}}})
		require.NoError(t, err)
	}
	require.EqualValues(t, 9, f.redisUnits(t, sku), "redis offers more than mysql has until the resync")

	res, err := f.rec.ResyncStock(ctx, contract.ResyncStockInput{SKU: sku})
	require.NoError(t, err)
	inv, err = f.orders.Inventory(ctx, sku)
	require.NoError(t, err)
	require.EqualValues(t, 5, inv.Available)
	require.EqualValues(t, -4, res.Applied)
	require.EqualValues(t, inv.Available, f.redisUnits(t, sku), "redis equals mysql after the resync")
	require.Zero(t, inv.RedisResync, "flag cleared")

	again, err := f.rec.ResyncStock(ctx, contract.ResyncStockInput{SKU: sku})
	require.NoError(t, err)
	require.Zero(t, again.Flag, "a second resync finds nothing to do")

	// A worker that has not cached the flag uses Redis again.
	fresh := f.worker(f.rdb, req, nil)
	require.False(t, f.place(t, fresh, f.prefix+"after", sku).Degraded)
	inv, err = f.orders.Inventory(ctx, sku)
	require.NoError(t, err)
	require.EqualValues(t, inv.Available, f.redisUnits(t, sku))
	require.EqualValues(t, 4, inv.Available)
}

// A resync whose flag changes under it (another degraded order) does not
// clear the flag: the order's move would be missing from its comparison.
func TestResyncRetriesWhenFlagMoves(t *testing.T) {
	ctx := context.Background()
	f := newReconcileFixture(t)
	sku := f.sku(t, "moving", 5, 5)
	req := &resyncRequests{}
	down := f.worker(deadRedis(t), req, nil)
	f.place(t, down, f.prefix+"d1", sku)

	// Simulate the race: the resync read flag 1, then d2 bumped it to 2.
	flags, err := f.orders.ResyncPending(ctx, []string{sku})
	require.NoError(t, err)
	f.place(t, down, f.prefix+"d2", sku)
	ok, err := f.orders.FinishResync(ctx, sku, flags[sku])
	require.NoError(t, err)
	require.False(t, ok)

	_, err = f.rec.ResyncStock(ctx, contract.ResyncStockInput{SKU: sku})
	require.NoError(t, err)
	require.EqualValues(t, 3, f.redisUnits(t, sku))
}

// With the guard open, orders do not even try Redis; after the cool-down
// the next order is the probe, and once it succeeds orders use Redis again.
func TestOpenGuardSkipsRedisThenProbes(t *testing.T) {
	f := newReconcileFixture(t)
	sku := f.sku(t, "guarded", 5, 5)
	const cooldown = 200 * time.Millisecond
	guard := redisguard.New(redisguard.Options{Failures: 1, Cooldown: cooldown})
	done, ok := guard.Allow()
	require.True(t, ok)
	done(&net.OpError{Op: "dial", Err: fmt.Errorf("connection refused")})
	require.False(t, guard.Up())

	acts := f.worker(f.rdb, &resyncRequests{}, guard)
	acts.ResyncFlagTTL = time.Millisecond
	res := f.place(t, acts, f.prefix+"g1", sku)
	require.True(t, res.Degraded)
	require.EqualValues(t, 5, f.redisUnits(t, sku), "redis untouched")
	// g1's degraded order flagged the SKU; a resync (Redis is fine) clears it.
	_, err := f.rec.ResyncStock(context.Background(), contract.ResyncStockInput{SKU: sku})
	require.NoError(t, err)
	require.EqualValues(t, 4, f.redisUnits(t, sku))

	time.Sleep(cooldown)
	res = f.place(t, acts, f.prefix+"g2", sku)
	require.False(t, res.Degraded, "the probe went to Redis and succeeded")
	require.True(t, guard.Up())
	require.EqualValues(t, 3, f.redisUnits(t, sku))
}

// Many buyers while Redis is down, on two workers with a cap of two
// degraded creates each: MySQL alone sells exactly the stock.
func TestDegradedReservationsConcurrent(t *testing.T) {
	ctx := context.Background()
	f := newReconcileFixture(t)
	const stock, buyers = 15, 60
	sku := f.sku(t, "flood", stock, stock)
	req := &resyncRequests{}
	dead := deadRedis(t)
	workers := []*activities.Activities{f.worker(dead, req, nil), f.worker(dead, req, nil)}

	type outcome struct {
		degraded bool
		err      error
	}
	out := make([]outcome, buyers)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range buyers {
		wg.Go(func() {
			<-start
			acts := workers[i%2]
			id := fmt.Sprintf("%sflood-%02d", f.prefix, i)
			items := []flashsale.Item{{SKU: sku, Quantity: 1}}
			res, err := acts.ReserveStock(ctx, contract.ReserveStockInput{OrderID: id, Items: items})
			if err != nil {
				out[i] = outcome{err: err}
				return
			}
			_, err = acts.CreateOrder(ctx, contract.CreateOrderInput{Order: flashsale.Order{OrderID: id, UserID: "u-" + id, Items: items},
				Degraded: res.Degraded})
			out[i] = outcome{degraded: res.Degraded, err: err}
		})
	}
	close(start)
	wg.Wait()

	var won, soldOut int
	for i, o := range out {
		require.True(t, o.degraded, "buyer %d", i)
		switch {
		case o.err == nil:
			won++
		case appErrType(o.err) == contract.TypeFor(flashsale.SoldOut):
			soldOut++
		default:
			t.Fatalf("buyer %d: %v", i, o.err)
		}
	}
	require.Equal(t, stock, won)
	require.Equal(t, buyers-stock, soldOut)
	require.Equal(t, stock, req.count())
	inv, err := f.orders.Inventory(ctx, sku)
	require.NoError(t, err)
	require.Zero(t, inv.Available)
	require.EqualValues(t, stock, inv.Frozen)
	require.EqualValues(t, stock, inv.RedisResync)

	_, err = f.rec.ResyncStock(ctx, contract.ResyncStockInput{SKU: sku})
	require.NoError(t, err)
	require.Zero(t, f.redisUnits(t, sku))
}

// Redis cannot go below zero: when it is over by units that an order in
// flight is still to give back, the resync removes what it can, keeps the
// flag, and finishes once the release has landed.
func TestResyncWaitsForReleasesInFlight(t *testing.T) {
	ctx := context.Background()
	f := newReconcileFixture(t)
	sku := f.sku(t, "inflight", 1, 1)
	req := &resyncRequests{}
	up := f.worker(f.rdb, req, nil)
	down := f.worker(deadRedis(t), req, nil)

	p := f.prefix + "p"
	require.False(t, f.place(t, up, p, sku).Degraded)
	f.running.Store(p, true)
	// Redis goes down; p expires in MySQL, its Redis release waits; a
	// degraded buyer takes the unit p gave back.
	_, err := down.CloseOrder(ctx, contract.CloseOrderInput{OrderID: p, Status: "EXPIRED", Reason: "t"})
	require.NoError(t, err)
	require.True(t, f.place(t, down, f.prefix+"d", sku).Degraded)

	// Redis is back. Buckets 0, p holds 1 in flight, MySQL 0: Redis will be
	// over by one once p's release lands, and nothing can be removed now.
	_, err = f.rec.ResyncStock(ctx, contract.ResyncStockInput{SKU: sku})
	require.ErrorContains(t, err, "comparing again", "partly applied: the flag must stay")
	flags, err := f.orders.ResyncPending(ctx, []string{sku})
	require.NoError(t, err)
	require.Positive(t, flags[sku])

	_, err = up.ReleaseStock(ctx, contract.ReleaseStockInput{OrderID: p, Items: []flashsale.Item{{SKU: sku, Quantity: 1}}})
	require.NoError(t, err)
	f.running.Delete(p)
	require.EqualValues(t, 1, f.redisUnits(t, sku), "the late release made redis over")

	res, err := f.rec.ResyncStock(ctx, contract.ResyncStockInput{SKU: sku})
	require.NoError(t, err)
	require.EqualValues(t, -1, res.Applied)
	require.Zero(t, f.redisUnits(t, sku))
	flags, err = f.orders.ResyncPending(ctx, []string{sku})
	require.NoError(t, err)
	require.Zero(t, flags[sku])
}
