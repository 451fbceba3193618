//go:build integration

package sale_test

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flashsale/flashsale/internal/sale"
)

// Held looks (the long poll of queue/me) against a real Redis: 18 buyers
// wait for their pass with nothing to wake them for a minute. Exactly the
// two whose ranks the counter reaches when two passes are spent are woken,
// by the watcher alone (no buyer looks meanwhile), and the other 16 only
// once the SKU sells out, all of them, told so. The watcher looks once per
// tick for all the waiters, not once per waiter.
func TestWaitsWakeTheServedThenEveryoneAtTheSellOut(t *testing.T) {
	var units, looks atomic.Int64
	units.Store(100)
	base, sku := newSale(t, &units, time.Minute)
	counting := func(ctx context.Context, sku string) (int64, error) {
		looks.Add(1)
		return units.Load(), nil
	}
	st := sale.New(testRedis(t), counting).WithCapacity(2, time.Minute)
	order := openSale(t, base, sku, 20)
	ctx := t.Context()

	places := map[string]sale.Place{}
	for _, u := range order {
		p, err := st.PlaceOf(ctx, sku, u)
		require.NoError(t, err)
		places[u] = p
	}
	for _, u := range order[:2] {
		require.False(t, sale.Waiting(places[u]), "%s holds a pass", u)
	}

	every := 20 * time.Millisecond
	w := sale.NewWaits(st, every, slog.Default())
	type wake struct {
		user  string
		c     sale.Counter
		woken bool
	}
	wakes := make(chan wake, len(order))
	var wg sync.WaitGroup
	for _, u := range order[2:] {
		p := places[u]
		require.True(t, sale.Waiting(p), "%s waits (rank %d, serving %d)", u, p.Rank, p.Serving)
		wg.Go(func() {
			c, woken := w.Wait(ctx, sku, p.Rank, time.Minute)
			wakes <- wake{u, c, woken}
		})
	}

	// Held and nothing changes: nobody is woken, and the watcher looks
	// about once per tick, far from once per waiter per tick.
	looks.Store(0)
	start := time.Now()
	time.Sleep(300 * time.Millisecond)
	ticks := int64(time.Since(start)/every) + 1
	require.Empty(t, wakes)
	require.LessOrEqual(t, looks.Load(), ticks+1, "one look per tick for 18 waiters")
	require.Positive(t, looks.Load())

	// Two passes spent: the watcher issues the next two and wakes exactly
	// ranks 3 and 4.
	for i, u := range order[:2] {
		require.NoError(t, st.Spend(ctx, sku, places[u].Rank, places[u].PassExpiry, "o"+string(rune('a'+i))))
	}
	units.Store(98)
	for i, u := range order[:2] {
		require.NoError(t, st.Settle(ctx, sku, places[u].Rank, places[u].PassExpiry, "o"+string(rune('a'+i)), true))
	}
	for range order[2:4] {
		got := <-wakes
		require.True(t, got.woken)
		require.Contains(t, order[2:4], got.user, "only ranks 3 and 4 are served")
		require.Equal(t, sale.Open, got.c.State)
		require.GreaterOrEqual(t, got.c.Serving, places[got.user].Rank)
		require.False(t, got.c.SoldOut)
		p, err := st.PlaceOf(ctx, sku, got.user)
		require.NoError(t, err)
		require.False(t, p.PassExpiry.IsZero(), "%s holds its pass once woken", got.user)
	}
	time.Sleep(10 * every)
	require.Empty(t, wakes, "ranks 5.. wait: two passes are outstanding, the capacity is 2")

	// Sold out: all 16 others at once, each told.
	units.Store(0)
	for range order[4:] {
		got := <-wakes
		require.True(t, got.woken)
		require.True(t, got.c.SoldOut, "%s", got.user)
		require.True(t, places[got.user].At(got.c).SoldOut)
	}
	wg.Wait()
}

// A held look ends without a wake when its time is up, with the counter
// the watcher read last, and at once when the waits close (the API
// shutting down); a look after the close is not held at all.
func TestWaitsTimeOutAndClose(t *testing.T) {
	var units atomic.Int64
	units.Store(100)
	base, sku := newSale(t, &units, time.Minute)
	st := base.WithCapacity(1, time.Minute)
	order := openSale(t, base, sku, 3)
	ctx := t.Context()
	for _, u := range order {
		_, err := st.PlaceOf(ctx, sku, u)
		require.NoError(t, err)
	}
	w := sale.NewWaits(st, 10*time.Millisecond, slog.Default())

	c, woken := w.Wait(ctx, sku, 3, 50*time.Millisecond)
	require.False(t, woken, "nothing changed for rank 3")
	// The counter the watcher read last, which did not serve rank 3: the
	// waiter's place is told from it (Place.At), without a look.
	require.Equal(t, sale.Open, c.State)
	require.EqualValues(t, 1, c.Serving)
	require.False(t, c.SoldOut)

	done := make(chan bool)
	go func() {
		_, woken := w.Wait(ctx, sku, 3, time.Hour)
		done <- woken
	}()
	time.Sleep(50 * time.Millisecond)
	w.Close()
	require.False(t, <-done)
	_, woken = w.Wait(ctx, sku, 3, time.Hour)
	require.False(t, woken, "closed: not held")
}
