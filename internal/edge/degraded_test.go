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

// mysqlStock stands in for MySQL's available units on the degraded path,
// counting how often it is read.
type mysqlStock struct {
	units atomic.Int64
	reads atomic.Int64
	known bool
}

func (m *mysqlStock) available(_ context.Context, sku string) (int64, error) {
	m.reads.Add(1)
	if !m.known {
		return 0, fmt.Errorf("sku %s: %w", sku, &flashsale.Error{Code: flashsale.UnknownSKU})
	}
	time.Sleep(time.Millisecond) // long enough for concurrent readers to share it
	return m.units.Load(), nil
}

// downGate is a gate whose Redis is unreachable (nothing listens on its
// address) and whose MySQL has units.
func downGate(t *testing.T, units int64, opts Options) (*Gate, *mysqlStock) {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: testenv.FreeAddr(t), MaxRetries: -1, DialTimeout: 100 * time.Millisecond})
	t.Cleanup(func() { _ = rdb.Close() })
	m := &mysqlStock{known: true}
	m.units.Store(units)
	opts.DBAvailable = m.available
	return New(rdb, inventory.New(rdb, inventory.Options{}), opts), m
}

func TestDegradedGate(t *testing.T) {
	ctx := context.Background()
	req := func(i int) Request {
		return Request{OrderID: fmt.Sprintf("o-%d", i), UserID: fmt.Sprintf("u-%d", i), Items: []flashsale.Item{{SKU: "s", Quantity: 1}}}
	}

	t.Run("without a MySQL reader it fails closed", func(t *testing.T) {
		g, _ := downGate(t, 5, Options{})
		g.opts.DBAvailable = nil
		_, err := g.Admit(ctx, req(1))
		require.ErrorIs(t, err, &flashsale.Error{Code: flashsale.Unavailable})
	})

	t.Run("an outage opens the guard, then MySQL's units admit", func(t *testing.T) {
		guard := redisguard.New(redisguard.Options{Failures: 1, Cooldown: time.Hour})
		g, _ := downGate(t, 5, Options{Guard: guard})
		tk, err := g.Admit(ctx, req(1))
		require.NoError(t, err)
		require.True(t, tk.Degraded)
		require.Empty(t, tk.Deduct, "MySQL's read does not say how the SKU deducts")
		require.False(t, guard.Up(), "the failed Redis call opened the guard")
		tk.Done(ctx, false)
		// With the guard open, Redis is not tried at all.
		tk, err = g.Admit(ctx, req(2))
		require.NoError(t, err)
		require.True(t, tk.Degraded)
		tk.Done(ctx, false)
		require.EqualValues(t, 2, g.Stats().Degraded)
	})

	t.Run("unknown sku", func(t *testing.T) {
		g, m := downGate(t, 0, Options{})
		m.known = false
		_, err := g.Admit(ctx, req(1))
		require.ErrorIs(t, err, &flashsale.Error{Code: flashsale.UnknownSKU})
	})

	t.Run("sold out is then answered from the in-process cache", func(t *testing.T) {
		g, m := downGate(t, 0, Options{LocalTTL: time.Hour})
		_, err := g.Admit(ctx, req(1))
		require.ErrorIs(t, err, &flashsale.Error{Code: flashsale.SoldOut})
		reads := m.reads.Load()
		for i := range 100 {
			_, err := g.Admit(ctx, req(i))
			require.ErrorIs(t, err, &flashsale.Error{Code: flashsale.SoldOut})
		}
		require.Equal(t, reads, m.reads.Load(), "no MySQL read once the cache knows")
		require.EqualValues(t, 100, g.Stats().SoldOutLocal)
	})

	t.Run("a sold-out answer from the order caches it too", func(t *testing.T) {
		g, m := downGate(t, 1, Options{LocalTTL: time.Hour})
		tk, err := g.Admit(ctx, req(1))
		require.NoError(t, err)
		m.units.Store(0) // another instance's buyer took the last unit
		tk.Done(ctx, true)
		reads := m.reads.Load()
		_, err = g.Admit(ctx, req(2))
		require.ErrorIs(t, err, &flashsale.Error{Code: flashsale.SoldOut})
		require.Equal(t, reads, m.reads.Load())
	})
}

// A flood while Redis is down: the degraded window lets at most
// DegradedMaxInFlight units through at a time and never more than MySQL
// has; everyone else is told BUSY or SOLD_OUT at once.
func TestDegradedGateFlood(t *testing.T) {
	ctx := context.Background()
	const limit, units, buyers = 4, 3, 200
	g, m := downGate(t, units, Options{DegradedMaxInFlight: limit})
	var (
		mu                   sync.Mutex
		tickets              []*Ticket
		busy, soldOut, other int
	)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range buyers {
		wg.Go(func() {
			<-start
			tk, err := g.Admit(ctx, Request{OrderID: fmt.Sprintf("f-%d", i), UserID: fmt.Sprintf("u-%d", i),
				Items: []flashsale.Item{{SKU: "s", Quantity: 1}}})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				tickets = append(tickets, tk)
			case errors.Is(err, &flashsale.Error{Code: flashsale.Busy}):
				busy++
			case errors.Is(err, &flashsale.Error{Code: flashsale.SoldOut}):
				soldOut++
			default:
				other++
			}
		})
	}
	close(start)
	wg.Wait()
	require.Zero(t, other)
	require.LessOrEqual(t, len(tickets), units, "never more admitted than MySQL has")
	require.Positive(t, len(tickets))
	require.Equal(t, buyers, len(tickets)+busy+soldOut)
	require.Less(t, m.reads.Load(), int64(buyers), "concurrent MySQL reads are shared")
	for _, tk := range tickets {
		tk.Done(ctx, false)
	}
	require.Zero(t, g.degraded.total(), "every admitted unit given back")
}
