//go:build integration

package orderdb_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/flashsale/flashsale"

	"github.com/stretchr/testify/require"

	"github.com/flashsale/flashsale/internal/orderdb"
)

func resyncFlag(t *testing.T, s *orderdb.Store, sku string) int64 {
	t.Helper()
	flags, err := s.ResyncPending(context.Background(), []string{sku})
	require.NoError(t, err)
	return flags[sku]
}

// Which moves flag a SKU for a Redis resync: only those of degraded orders
// that change available (create and close), never a payment or a normal
// order.
func TestDegradedOrdersFlagResync(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	sku := "resync-flags"
	putSKU(t, s, sku, 10, 100)

	degraded := func(id string) orderdb.NewOrder {
		o := newOrder(id, "user-"+id, item(sku, 1))
		o.Degraded = true
		return o
	}
	steps := []struct {
		name string
		do   func() error
		want int64
	}{
		{"normal order", func() error { _, err := s.CreateOrder(ctx, newOrder("rf-n1", "u-n1", item(sku, 1))); return err }, 0},
		{"close normal order", func() error { _, err := s.CloseOrder(ctx, "rf-n1", flashsale.StatusExpired, "t"); return err }, 0},
		{"degraded order", func() error { _, err := s.CreateOrder(ctx, degraded("rf-d1")); return err }, 1},
		{"retried degraded order", func() error { _, err := s.CreateOrder(ctx, degraded("rf-d1")); return err }, 1},
		{"second degraded order", func() error { _, err := s.CreateOrder(ctx, degraded("rf-d2")); return err }, 2},
		{"pay degraded order", func() error { _, err := s.ConfirmPayment(ctx, "rf-d2", "rf-t2", 100); return err }, 2},
		{"close degraded order", func() error { _, err := s.CloseOrder(ctx, "rf-d1", flashsale.StatusCancelled, "t"); return err }, 3},
		{"close it again", func() error { _, err := s.CloseOrder(ctx, "rf-d1", flashsale.StatusCancelled, "t"); return err }, 3},
	}
	for _, st := range steps {
		require.NoError(t, st.do(), st.name)
		require.Equal(t, st.want, resyncFlag(t, s, sku), st.name)
	}
	o, err := s.Order(ctx, "rf-d1")
	require.NoError(t, err)
	require.True(t, o.Degraded)
	checkInvariants(t, s, sku)

	// The clear is a compare-and-set on the value read.
	ok, err := s.FinishResync(ctx, sku, 2)
	require.NoError(t, err)
	require.False(t, ok, "a stale value must not clear the flag")
	require.EqualValues(t, 3, resyncFlag(t, s, sku))
	ok, err = s.FinishResync(ctx, sku, 3)
	require.NoError(t, err)
	require.True(t, ok)
	require.Zero(t, resyncFlag(t, s, sku))
	require.Zero(t, inventory(t, s, sku).RedisResync)
}

// Many buyers reserving in MySQL alone: exactly the stock is sold, and the
// flag counts exactly the orders that took units.
func TestDegradedOrdersConcurrent(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	const stock, buyers = 20, 120
	sku := "resync-hot"
	putSKU(t, s, sku, stock, 100)

	errs := make([]error, buyers)
	fns := make([]func(), buyers)
	for i := range buyers {
		fns[i] = func() {
			o := newOrder(fmt.Sprintf("rc-%03d", i), fmt.Sprintf("u-%03d", i), item(sku, 1))
			o.Degraded = true
			_, errs[i] = s.CreateOrder(ctx, o)
		}
	}
	run(fns)
	var won, soldOut int64
	for _, err := range errs {
		switch {
		case err == nil:
			won++
		case errors.Is(err, &flashsale.Error{Code: flashsale.StockDrift}):
			soldOut++
		default:
			t.Fatalf("unexpected error: %v", err)
		}
	}
	require.EqualValues(t, stock, won)
	require.EqualValues(t, buyers-stock, soldOut)
	inv := inventory(t, s, sku)
	require.Zero(t, inv.Available)
	require.EqualValues(t, stock, inv.Frozen)
	require.EqualValues(t, stock, resyncFlag(t, s, sku))
	checkInvariants(t, s, sku)
}
