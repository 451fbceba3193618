//go:build integration

package edge

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flashsale/flashsale"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/flashsale/flashsale/internal/inventory"
	"github.com/flashsale/flashsale/internal/redisguard"
	"github.com/flashsale/flashsale/internal/testenv"
)

// fixture is a gate on the real Redis with its own SKU and id prefix, so
// tests never share keys; cleanup deletes every key they made.
type fixture struct {
	t     testing.TB
	rdb   *redis.Client
	stock *inventory.Store
	sku   string
	id    string
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	rdb := testenv.Redis(t)
	id := testenv.UniqueID(t)
	f := &fixture{t: t, rdb: rdb, stock: inventory.New(rdb, inventory.Options{}), sku: "edge-" + id, id: id}
	t.Cleanup(func() {
		ctx := context.Background()
		for _, pattern := range []string{"fs:{sku:" + f.sku + "*", "fs:placed:" + id + "*", "rate:fs:buy:" + id + "*", "rate:fs:waitlist:" + id + "*"} {
			iter := rdb.Scan(ctx, 0, pattern, 1000).Iterator()
			for iter.Next(ctx) {
				_ = rdb.Unlink(ctx, iter.Val()).Err()
			}
		}
	})
	return f
}

func (f *fixture) preheat(units int64) {
	f.t.Helper()
	_, err := f.stock.Preheat(context.Background(), f.sku, units, 4)
	require.NoError(f.t, err)
}

// gate returns a gate whose stock-change listener runs for the test.
func (f *fixture) gate(opts Options) *Gate {
	f.t.Helper()
	g := New(f.rdb, f.stock, opts)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = g.Run(ctx)
	}()
	f.t.Cleanup(func() {
		cancel()
		<-done
	})
	// Until subscribed, the cache is cleared when the subscription lands.
	require.Eventually(f.t, func() bool { return g.Stats().Subscribed }, 5*time.Second, time.Millisecond)
	return g
}

func (f *fixture) req(n int, qty int64) Request {
	return Request{
		OrderID: fmt.Sprintf("%s-o%d", f.id, n), UserID: fmt.Sprintf("%s-u%d", f.id, n),
		Items: []flashsale.Item{{SKU: f.sku, Quantity: qty}},
	}
}

func TestAdmissionIsSizedByStock(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	f.preheat(3)
	g := f.gate(Options{MaxInFlight: 16})

	var held []*Ticket
	for i := range 3 {
		tk, err := g.Admit(ctx, f.req(i, 1))
		require.NoError(t, err)
		held = append(held, tk)
	}
	// Three units, three in flight: a fourth buyer could only be told sold
	// out by a workflow, so it is told to retry instead.
	_, err := g.Admit(ctx, f.req(3, 1))
	var re *RetryError
	require.ErrorAs(t, err, &re)
	require.ErrorIs(t, err, &flashsale.Error{Code: flashsale.Busy})
	require.Equal(t, time.Second, re.After)

	held[0].Done(ctx, false)
	held[0].Done(ctx, false) // twice is harmless
	tk, err := g.Admit(ctx, f.req(4, 1))
	require.NoError(t, err)
	tk.Done(ctx, false)

	// An order for more than is left, with nobody else in flight, is sold
	// out for that quantity only: no hint is cached.
	for _, tk := range held[1:] {
		tk.Done(ctx, false)
	}
	_, err = g.Admit(ctx, f.req(5, 4))
	require.ErrorIs(t, err, &flashsale.Error{Code: flashsale.SoldOut})
	_, err = g.Admit(ctx, f.req(6, 1))
	require.NoError(t, err)

	st := g.Stats()
	require.Equal(t, int64(5), st.Admitted)
	require.Equal(t, int64(1), st.Busy)
	require.Equal(t, int64(1), st.InFlightUnits)
	require.Zero(t, st.LocalSoldOutSKUs)
}

func TestAdmissionWindowCap(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	f.preheat(100)
	g := f.gate(Options{MaxInFlight: 2})
	for i := range 2 {
		_, err := g.Admit(ctx, f.req(i, 1))
		require.NoError(t, err)
	}
	_, err := g.Admit(ctx, f.req(2, 1))
	require.ErrorIs(t, err, &flashsale.Error{Code: flashsale.Busy})
	// An order larger than the window waits for an empty window.
	_, err = g.Admit(ctx, f.req(3, 5))
	require.ErrorIs(t, err, &flashsale.Error{Code: flashsale.Busy})
}

func TestSoldOutLayers(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	f.preheat(1)
	// A long local TTL proves that Pub/Sub, not expiry, clears the cache.
	a := f.gate(Options{LocalTTL: time.Minute})
	b := f.gate(Options{LocalTTL: time.Minute})

	_, err := f.stock.Reserve(ctx, "holder-"+f.id, f.sku, 1)
	require.NoError(t, err)

	_, err = a.Admit(ctx, f.req(1, 1))
	require.ErrorIs(t, err, &flashsale.Error{Code: flashsale.SoldOut})
	require.Equal(t, int64(1), a.Stats().SoldOutStock, "first seen empty by reading the buckets")
	_, err = a.Admit(ctx, f.req(2, 1))
	require.ErrorIs(t, err, &flashsale.Error{Code: flashsale.SoldOut})
	require.Equal(t, int64(1), a.Stats().SoldOutLocal, "then answered without the network")

	_, err = b.Admit(ctx, f.req(3, 1))
	require.ErrorIs(t, err, &flashsale.Error{Code: flashsale.SoldOut})
	require.Equal(t, int64(1), b.Stats().SoldOutRedis, "another instance stops at the Redis flag")
	_, err = b.Admit(ctx, f.req(4, 1))
	require.ErrorIs(t, err, &flashsale.Error{Code: flashsale.SoldOut})
	require.Equal(t, int64(1), b.Stats().SoldOutLocal)

	// The unit comes back: both instances sell it again at once.
	_, err = f.stock.Release(ctx, "holder-"+f.id, f.sku)
	require.NoError(t, err)
	for _, g := range []*Gate{a, b} {
		require.Eventually(t, func() bool { return !g.cache.soldOut(f.sku, time.Now()) },
			time.Second, 5*time.Millisecond)
	}
	tk, err := b.Admit(ctx, f.req(5, 1))
	require.NoError(t, err)
	tk.Done(ctx, false)
}

// A workflow that answered SOLD_OUT caches the hint only if the SKU is
// really empty.
func TestDoneSoldOutVerifies(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	f.preheat(1)
	g := f.gate(Options{LocalTTL: time.Minute})

	tk, err := g.Admit(ctx, f.req(1, 1))
	require.NoError(t, err)
	tk.Done(ctx, true) // the unit is still there
	require.Zero(t, g.Stats().LocalSoldOutSKUs)

	tk, err = g.Admit(ctx, f.req(2, 1))
	require.NoError(t, err)
	_, err = f.stock.Reserve(ctx, "other-"+f.id, f.sku, 1)
	require.NoError(t, err)
	tk.Done(ctx, true)
	require.Equal(t, 1, g.Stats().LocalSoldOutSKUs)
}

func TestUnknownSKU(t *testing.T) {
	f := newFixture(t)
	g := f.gate(Options{})
	_, err := g.Admit(context.Background(), f.req(1, 1))
	require.ErrorIs(t, err, &flashsale.Error{Code: flashsale.UnknownSKU})
	require.Zero(t, g.Stats().InFlightUnits)
}

func TestRateLimit(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	f.preheat(100)
	g := f.gate(Options{BuyRate: 2})
	r := f.req(1, 1)
	for i := range 2 {
		r.OrderID = fmt.Sprintf("%s-r%d", f.id, i)
		tk, err := g.Admit(ctx, r)
		require.NoError(t, err)
		tk.Done(ctx, false)
	}
	r.OrderID = f.id + "-r3"
	_, err := g.Admit(ctx, r)
	var re *RetryError
	require.ErrorAs(t, err, &re)
	require.ErrorIs(t, err, &flashsale.Error{Code: flashsale.RateLimited})
	require.Positive(t, re.After)
	// The budget is per user.
	tk, err := g.Admit(ctx, f.req(2, 1))
	require.NoError(t, err)
	tk.Done(ctx, false)
}

func TestDuplicateOrderIDBypassesShedding(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	f.preheat(1)
	g := f.gate(Options{})

	r := f.req(1, 1)
	r.ClientOrderID = true
	tk, err := g.Admit(ctx, r)
	require.NoError(t, err)
	require.False(t, tk.Duplicate)
	_, err = f.stock.Reserve(ctx, r.OrderID, f.sku, 1)
	require.NoError(t, err)
	tk.Done(ctx, false)

	// Sold out now, but the repeat must reach its order for its answer.
	tk, err = g.Admit(ctx, r)
	require.NoError(t, err)
	require.True(t, tk.Duplicate)
	tk.Done(ctx, false)

	// Another user cannot borrow the id.
	thief := r
	thief.UserID = f.id + "-thief"
	_, err = g.Admit(ctx, thief)
	require.ErrorIs(t, err, &flashsale.Error{Code: flashsale.OrderIDConflict})

	// A new buyer is shed as usual.
	_, err = g.Admit(ctx, f.req(2, 1))
	require.ErrorIs(t, err, &flashsale.Error{Code: flashsale.SoldOut})
	require.Equal(t, int64(1), g.Stats().Duplicates)
}

// An admitted one-line order carries when its SKU takes its unit, as the
// admission's own stock read found it; any other ticket carries none.
func TestTicketSaysHowTheSKUDeducts(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	f.preheat(4)
	// Its keys start with f.sku's, so the fixture's cleanup finds them.
	other := f.sku + "-b"
	_, err := f.stock.Preheat(ctx, other, 4, 4)
	require.NoError(t, err)
	g := f.gate(Options{})

	tk, err := g.Admit(ctx, f.req(1, 1))
	require.NoError(t, err)
	require.Equal(t, flashsale.DeductHold, tk.Deduct)
	tk.Done(ctx, false)

	require.NoError(t, f.stock.SetBookings(ctx, f.sku, 2))
	r := f.req(2, 1)
	r.ClientOrderID = true
	tk, err = g.Admit(ctx, r)
	require.NoError(t, err)
	require.Equal(t, flashsale.DeductPayment, tk.Deduct)
	tk.Done(ctx, false)

	tk, err = g.Admit(ctx, r)
	require.NoError(t, err)
	require.True(t, tk.Duplicate)
	require.Empty(t, tk.Deduct)
	tk.Done(ctx, false)

	two := f.req(3, 1)
	two.Items = append(two.Items, flashsale.Item{SKU: other, Quantity: 1})
	tk, err = g.Admit(ctx, two)
	require.NoError(t, err)
	require.Empty(t, tk.Deduct)
	tk.Done(ctx, false)
	require.Equal(t, int64(3), g.Stats().Admitted)
}

func TestRedisDownFailsClosed(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: 100 * time.Millisecond})
	t.Cleanup(func() { _ = rdb.Close() })
	g := New(rdb, inventory.New(rdb, inventory.Options{}), Options{})
	_, err := g.Admit(context.Background(), Request{OrderID: "o", UserID: "u", Items: []flashsale.Item{{SKU: "s", Quantity: 1}}})
	require.ErrorIs(t, err, &flashsale.Error{Code: flashsale.Unavailable})
}

// Many buyers racing one gate: every admitted request finds its unit, so
// the workflows started equal the units sold.
func TestConcurrentAdmissionWastesNothing(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	const units = 40
	f.preheat(units)
	g := f.gate(Options{MaxInFlight: 8})

	var seq, reserved, refused atomic.Int64
	var wg sync.WaitGroup
	for range 30 {
		wg.Go(func() {
			for {
				n := int(seq.Add(1))
				tk, err := g.Admit(ctx, f.req(n, 1))
				switch {
				case errors.Is(err, &flashsale.Error{Code: flashsale.Busy}):
					time.Sleep(5 * time.Millisecond)
					continue
				case errors.Is(err, &flashsale.Error{Code: flashsale.SoldOut}):
					return
				case err != nil:
					t.Error(err)
					return
				}
				// What the order workflow's first step does.
				_, rerr := f.stock.Reserve(ctx, f.req(n, 1).OrderID, f.sku, 1)
				if rerr != nil {
					refused.Add(1)
				} else {
					reserved.Add(1)
				}
				tk.Done(ctx, rerr != nil)
			}
		})
	}
	wg.Wait()
	require.Equal(t, int64(units), reserved.Load())
	require.Zero(t, refused.Load(), "no admitted request was turned away by Redis")
	t.Logf("requests %d, stats %+v", seq.Load(), g.Stats())
	require.Equal(t, int64(units), g.Stats().Admitted)
}

// TestClientHangUpIsNotAnOutage: buyers who hang up while their request is
// in Redis (a cancelled context: a dial cut short, a pool wait abandoned)
// are answered with their own cancellation. The guard does not count them
// as Redis failures and the gate does not take the MySQL-only path, so a
// crowd of impatient clients cannot push a healthy Redis out of service.
func TestClientHangUpIsNotAnOutage(t *testing.T) {
	f := newFixture(t)
	f.preheat(5)
	// A client of its own with no pooled connection: each call must dial,
	// and a dial under a cancelled context fails like a network error.
	rdb := redis.NewClient(&redis.Options{Addr: testenv.RedisAddr(), MaxRetries: -1})
	t.Cleanup(func() { _ = rdb.Close() })
	guard := redisguard.New(redisguard.Options{Failures: 2, Cooldown: time.Hour})
	mysql := &mysqlStock{known: true}
	mysql.units.Store(5)
	g := New(rdb, inventory.New(rdb, inventory.Options{}), Options{Guard: guard, DBAvailable: mysql.available})

	gone, cancel := context.WithCancel(context.Background())
	cancel()
	for i := range 10 {
		_, err := g.Admit(gone, f.req(i, 1))
		require.ErrorIs(t, err, context.Canceled)
		require.NotErrorIs(t, err, &flashsale.Error{Code: flashsale.Unavailable})
	}
	require.True(t, guard.Up(), "client hang-ups must not open the Redis guard")
	st := g.Stats()
	require.Zero(t, st.Unavailable)
	require.Zero(t, st.Degraded)
	require.Zero(t, mysql.reads.Load(), "nothing was decided on MySQL's stock")

	tk, err := g.Admit(context.Background(), f.req(100, 1))
	require.NoError(t, err)
	require.False(t, tk.Degraded, "the next buyer is served through Redis")
	tk.Done(context.Background(), false)
}

// Buyers reading a sold-out SKU at the same moment are all answered
// SOLD_OUT, however few placement permits there are: the stock read comes
// before the permit, so readers of an empty SKU never hold the permits
// and answer each other BUSY. (With the permit first, 32 readers and 2
// permits answered most of them BUSY; the h22prof profile saw it under wrk.)
func TestSoldOutReadersAreNotBusy(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	f.preheat(1)
	_, err := f.stock.Reserve(ctx, "holder-"+f.id, f.sku, 1)
	require.NoError(t, err)
	g := f.gate(Options{Placements: NewPlacementLimit(PlacementOptions{Max: 2})})

	const readers = 32
	start := make(chan struct{})
	errs := make([]error, readers)
	var wg sync.WaitGroup
	for i := range readers {
		wg.Go(func() {
			<-start
			_, errs[i] = g.Admit(ctx, f.req(i, 1))
		})
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		require.ErrorIs(t, err, &flashsale.Error{Code: flashsale.SoldOut}, "reader %d", i)
	}
	require.Zero(t, g.Stats().Busy)
}

// A pass holder (Request.Pass) is never answered BUSY by the per-SKU
// window nor by the placement limit: with a window of 2 and a limit of 2
// permits both taken by ordinary buys, a third ordinary buy is BUSY, and
// 12 pass holders arriving at once are all admitted (exactly 12, none
// BUSY, all 12 past the limit, which had no permit free). The stock
// still bounds them: the units in flight never exceed the units read.
func TestPassHolderIsNotBusy(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	f.preheat(20)
	limit := NewPlacementLimit(PlacementOptions{Max: 2, Target: -1})
	g := f.gate(Options{MaxInFlight: 2, Placements: limit})
	for i := range 2 {
		_, err := g.Admit(ctx, f.req(i, 1))
		require.NoError(t, err)
	}
	_, err := g.Admit(ctx, f.req(2, 1))
	require.ErrorIs(t, err, &flashsale.Error{Code: flashsale.Busy})

	var admitted, refused atomic.Int64
	var wg sync.WaitGroup
	for i := range 12 {
		wg.Go(func() {
			req := f.req(100+i, 1)
			req.Pass = true
			if _, err := g.Admit(ctx, req); err != nil {
				refused.Add(1)
				t.Errorf("pass holder %d: %v", i, err)
				return
			}
			admitted.Add(1)
		})
	}
	wg.Wait()
	require.Equal(t, int64(12), admitted.Load())
	require.Zero(t, refused.Load())
	st := g.Stats()
	require.Equal(t, int64(14), st.InFlightUnits)
	require.Equal(t, int64(12), st.PassOverLimit)
	require.Equal(t, int64(1), st.Busy)
	require.Equal(t, 2, limit.InFlight())

	// 14 of 20 units in flight: 6 more pass holders fit, a seventh would
	// ask for a unit already owed to a request in flight.
	for i := range 6 {
		req := f.req(200+i, 1)
		req.Pass = true
		_, err := g.Admit(ctx, req)
		require.NoError(t, err)
	}
	req := f.req(300, 1)
	req.Pass = true
	_, err = g.Admit(ctx, req)
	require.ErrorIs(t, err, &flashsale.Error{Code: flashsale.Busy}, "the stock, not the cap")
	require.Equal(t, int64(20), g.Stats().InFlightUnits)
}
