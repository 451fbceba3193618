//go:build integration

package queueing_test

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/internal/edge"
	"github.com/flashsale/flashsale/internal/inventory"
	"github.com/flashsale/flashsale/internal/orderdb"
	"github.com/flashsale/flashsale/internal/queueing"
	"github.com/flashsale/flashsale/internal/sale"
	"github.com/flashsale/flashsale/internal/testenv"
)

// newService is a queue over a sale of a new SKU with units units left,
// opening in an hour, at buyRate queue requests per second per buyer.
func newService(t *testing.T, units int64, buyRate int) (*queueing.Service, string) {
	t.Helper()
	return newServiceOn(t, testenv.Redis(t), units, buyRate, sale.DefaultCapacity)
}

// newServiceOn is newService on rdb, its store publishing capacity passes.
func newServiceOn(t *testing.T, rdb *redis.Client, units int64, buyRate int, capacity int64) (*queueing.Service, string) {
	t.Helper()
	sku := "queueing-" + testenv.UniqueID(t)
	seeds, err := orderdb.Open(t.Context(), testenv.MySQLDSN(t))
	require.NoError(t, err)
	t.Cleanup(func() { _ = seeds.Close() })
	st := sale.New(rdb, func(context.Context, string) (int64, error) { return units, nil }).WithSeeds(seeds).
		WithCapacity(capacity, time.Minute)
	_, err = st.Prepare(t.Context(), sku, "run-1", time.Now().Add(time.Hour), time.Minute, 0)
	require.NoError(t, err)
	waits := sale.NewWaits(st, sale.DefaultWaitEvery, slog.Default())
	t.Cleanup(waits.Close)
	return &queueing.Service{
		Gate:        edge.New(rdb, inventory.New(rdb, inventory.Options{}), edge.Options{BuyRate: buyRate}),
		Door:        sale.NewDoor(st, sale.NewSigner("test-secret"), nil),
		Waits:       waits,
		LookTimeout: 5 * time.Second,
	}, sku
}

// Enter is once per buyer; Me answers the buyer's place, without a pass
// before the open and with one the sale's check takes once their turn
// came; a buyer not in the queue is NOT_IN_QUEUE.
func TestEnterAndMe(t *testing.T) {
	ctx := t.Context()
	q, sku := newService(t, 10, 1000)
	// Buyers of this run only: the gate's rate keys outlive a test.
	alice, bob := "alice-"+sku, "bob-"+sku
	first, err := q.Enter(ctx, alice, sku)
	require.NoError(t, err)
	require.True(t, first.Entered)
	again, err := q.Enter(ctx, alice, sku)
	require.NoError(t, err)
	require.False(t, again.Entered, "a repeat enters nobody")
	require.Equal(t, first.Ticket, again.Ticket)

	p, err := q.Me(ctx, alice, sku, 0)
	require.NoError(t, err)
	require.Equal(t, first.Ticket, p.Ticket.Ticket)
	require.Empty(t, p.Pass, "no pass before the open")

	_, err = q.Door.Store().Open(ctx, sku, nil)
	require.NoError(t, err)
	p, err = q.Me(ctx, alice, sku, time.Second)
	require.NoError(t, err)
	require.EqualValues(t, 1, p.Rank)
	require.NotEmpty(t, p.Pass, "alone in the queue, her turn came")
	require.Equal(t, p.Place.PassExpiry, p.PassExpiresAt)
	claim, err := q.Door.Check(ctx, alice, []flashsale.Item{{SKU: sku, Quantity: 1}}, p.Pass)
	require.NoError(t, err)
	require.True(t, claim.Live)

	_, err = q.Me(ctx, bob, sku, 0)
	require.Equal(t, flashsale.NotInQueue, flashsale.ErrorCode(err))
}

// Each use case spends one of the buyer's queue requests at the gate: at
// one a second, the second call at once is RATE_LIMITED, and another
// buyer is not.
func TestQueueRequestsAreRateLimited(t *testing.T) {
	ctx := t.Context()
	q, sku := newService(t, 10, 1)
	alice, bob := "alice-"+sku, "bob-"+sku
	_, err := q.Enter(ctx, alice, sku)
	require.NoError(t, err)
	_, err = q.Me(ctx, alice, sku, 0)
	require.Equal(t, flashsale.RateLimited, flashsale.ErrorCode(err))
	_, err = q.Enter(ctx, bob, sku)
	require.NoError(t, err)
}

// A crowd held from the open comes to the end of its waits together. A
// held look that ends without news is answered from the counter the
// watcher read last, so the buyer's place is asked of Redis once (the
// look before the wait), not once more at its end for all of them at
// once; and the answer is the place a look would have read.
func TestAHeldLookEndingWithoutNewsAsksRedisOnce(t *testing.T) {
	ctx := t.Context()
	rdb := testenv.Redis(t)
	looks := &scriptRuns{}
	rdb.AddHook(looks)
	// One pass at a time: the first rank's, so the second waits with
	// nothing to wake them.
	q, sku := newServiceOn(t, rdb, 10, 1000, 1)
	alice, bob := "alice-"+sku, "bob-"+sku
	for _, u := range []string{alice, bob} {
		_, err := q.Enter(ctx, u, sku)
		require.NoError(t, err)
	}
	_, err := q.Door.Store().Open(ctx, sku, nil)
	require.NoError(t, err)
	// The shuffle ranks them: alice is whoever came first.
	if rank, _, err := q.Door.Store().RankOf(ctx, sku, alice); err != nil || rank != 1 {
		require.NoError(t, err)
		alice, bob = bob, alice
	}
	first, err := q.Me(ctx, alice, sku, 0)
	require.NoError(t, err)
	require.NotEmpty(t, first.Pass)

	before := looks.of(bob)
	held, err := q.Me(ctx, bob, sku, time.Second)
	require.NoError(t, err)
	require.Equal(t, 1, looks.of(bob)-before, "bob's place asked of Redis once: the look before the wait")
	require.Empty(t, held.Pass)
	require.Equal(t, sale.Open, held.State)

	now, err := q.Me(ctx, bob, sku, 0)
	require.NoError(t, err)
	require.Equal(t, now.Place.Ticket, held.Place.Ticket)
	for _, f := range []struct {
		name      string
		held, now int64
	}{
		{"serving", held.Serving, now.Serving}, {"ahead", held.Ahead, now.Ahead}, {"queued", held.Queued, now.Queued},
		{"outstanding", held.Outstanding, now.Outstanding}, {"capacity", held.Capacity, now.Capacity},
	} {
		require.Equal(t, f.now, f.held, "%s: the held look's answer is the place a look reads", f.name)
	}
	require.Equal(t, now.SoldOut, held.SoldOut)
}

// scriptRuns counts the scripts run for each argument (a go-redis hook):
// a queue look runs sale_me.lua with its buyer's id as an argument.
type scriptRuns struct {
	mu   sync.Mutex
	runs map[string]int
}

func (h *scriptRuns) of(arg string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.runs[arg]
}

func (h *scriptRuns) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *scriptRuns) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if name := cmd.Name(); name == "evalsha" || name == "eval" {
			h.mu.Lock()
			if h.runs == nil {
				h.runs = map[string]int{}
			}
			for _, a := range cmd.Args() {
				if s, ok := a.(string); ok {
					h.runs[s]++
				}
			}
			h.mu.Unlock()
		}
		return next(ctx, cmd)
	}
}

func (h *scriptRuns) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// Over HTTP/2 a crowd's queue requests reach an instance all at once. They
// take the instance's queue slots (edge.Gate.AdmitQueue) before they ask
// Redis, so they never hold more of its pool than the slots: another
// caller of the same pool (a pass holder's buy, the sale's watcher, the
// worker's activities where they share it) gets a connection within the
// pool's timeout while 400 looks crowd in, every Redis answer slowed by
// 10 ms as on a saturated box. Without the slots the looks queued for the
// pool ahead of it (each of their calls again): 350-359 of its waits timed
// out, every caller's among them.
func TestACrowdOfLooksLeavesTheRedisPoolToOthers(t *testing.T) {
	ctx := t.Context()
	var slow atomic.Bool
	rdb := redis.NewClient(&redis.Options{Addr: testenv.RedisAddr(), PoolSize: 8, PoolTimeout: 300 * time.Millisecond,
		Dialer: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
			return slowConn{c, &slow}, err
		}})
	t.Cleanup(func() { _ = rdb.Close() })
	q, sku := newServiceOn(t, rdb, 10, 1000, sale.DefaultCapacity)
	q.Gate = edge.New(rdb, inventory.New(rdb, inventory.Options{}), edge.Options{BuyRate: 1000, QueueInFlight: 4,
		QueuePatience: time.Minute})
	q.LookTimeout = time.Minute
	const crowd = 400
	buyers := make([]string, crowd)
	for i := range buyers {
		buyers[i] = fmt.Sprintf("buyer-%d-%s", i, sku)
		_, err := q.Enter(ctx, buyers[i], sku)
		require.NoError(t, err)
	}

	slow.Store(true)
	before := *rdb.PoolStats()
	var answered, failed atomic.Int64
	var wg sync.WaitGroup
	for _, b := range buyers {
		wg.Go(func() {
			if _, err := q.Me(ctx, b, sku, 0); err != nil {
				failed.Add(1)
				return
			}
			answered.Add(1)
		})
	}
	crowding := make(chan struct{})
	go func() { wg.Wait(); close(crowding) }()
	var pings, refused int
	for done := false; !done; {
		select {
		case <-crowding:
			done = true
		case <-time.After(20 * time.Millisecond):
			pings++
			if err := rdb.Ping(ctx).Err(); err != nil {
				refused++
				t.Logf("ping %d: %v", pings, err)
			}
		}
	}
	require.EqualValues(t, crowd, answered.Load(), "every look answered (%d failed)", failed.Load())
	// go-redis retries a pool timeout (up to MaxRetries times, each a whole
	// PoolTimeout), so a ping may still succeed late: the pool's own count
	// says whether anyone waited for a connection at all.
	after := *rdb.PoolStats()
	require.Zero(t, after.Timeouts-before.Timeouts, "no pool wait timed out")
	require.Zero(t, after.WaitCount-before.WaitCount, "nobody waited for a connection: the looks held at most 4 of 8")
	require.Zero(t, refused, "another caller of the pool was never refused a connection (of %d pings)", pings)
	require.Greater(t, pings, 10, "the pings overlapped the crowd")
}

// slowConn delays every read by 10 ms while slow is set: a Redis answer on
// a box whose cores are taken, the connection held meanwhile.
type slowConn struct {
	net.Conn
	slow *atomic.Bool
}

func (c slowConn) Read(b []byte) (int, error) {
	if c.slow.Load() {
		time.Sleep(10 * time.Millisecond)
	}
	return c.Conn.Read(b)
}
