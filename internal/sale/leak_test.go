//go:build integration

package sale_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flashsale/flashsale/internal/inventory"
	"github.com/flashsale/flashsale/internal/sale"
	"github.com/flashsale/flashsale/internal/testenv"
)

// A unit goes to the next rank, never to a race between pass holders, on
// the real buckets: 5 units, 20 buyers. A buy that takes its unit and
// settles between the counter's read of the units and its script (the
// window every look has) leaves 4 units for 4 passes: no pass for rank 6,
// which used to go out for the unit just taken, so that at the end 5
// holders raced for 4 units. Each holder's buy then gets its unit (none is
// refused), the 6th rank is told the sell-out; a unit given back (an order
// released) goes to rank 6 and no one else, and buys.
func TestAUnitGoesToTheNextRankNotARace(t *testing.T) {
	ctx := t.Context()
	rdb := testenv.Redis(t)
	sku := "leak-" + testenv.UniqueID(t)
	t.Cleanup(func() {
		for _, k := range rdb.Keys(context.Background(), "fs:{sku:"+sku+"*").Val() {
			_ = rdb.Unlink(context.Background(), k).Err()
		}
	})
	inv := inventory.New(rdb, inventory.Options{})
	_, err := inv.Preheat(ctx, sku, 5, 4)
	require.NoError(t, err)
	var between func() // runs once, after the next read of the units
	st := sale.New(rdb, func(ctx context.Context, sku string) (int64, error) {
		av, err := inv.AvailableTo(ctx, sku, "")
		if h := between; h != nil {
			between = nil
			h()
		}
		return av.Units, err
	}).WithSeeds(&memSeeds{}).WithCapacity(100, time.Minute)
	_, err = st.Prepare(ctx, sku, "run-leak", time.Now().Add(time.Hour), time.Minute, 0)
	require.NoError(t, err)
	order := openSale(t, st, sku, 20)
	place := func(u string) sale.Place {
		p, err := st.PlaceOf(ctx, sku, u)
		require.NoError(t, err)
		return p
	}
	buy := func(u string) {
		p := place(u)
		require.False(t, p.PassExpiry.IsZero(), "%s (rank %d) holds a pass", u, p.Rank)
		require.NoError(t, st.Spend(ctx, sku, p.Rank, p.PassExpiry, "o-"+u))
		_, err := inv.Reserve(ctx, "o-"+u, sku, 1)
		require.NoError(t, err, "a pass holder's buy gets its unit")
		require.NoError(t, st.Settle(ctx, sku, p.Rank, p.PassExpiry, "o-"+u, true))
	}
	require.Equal(t, int64(5), place(order[19]).Serving)

	between = func() { buy(order[0]) }
	p := place(order[19])
	require.Equal(t, int64(5), p.Serving, "4 units left, 4 passes out: none for rank 6")
	require.Equal(t, int64(4), p.Outstanding)
	for _, u := range order[1:5] {
		buy(u)
	}
	sixth := place(order[5])
	require.True(t, sixth.SoldOut)
	require.True(t, sixth.PassExpiry.IsZero())
	require.Equal(t, int64(5), sixth.Serving)

	// A unit comes back: the next look, whoever's, serves rank 6 alone.
	_, err = inv.Release(ctx, "o-"+order[2], sku)
	require.NoError(t, err)
	for _, u := range append(order[6:], order[:5]...) {
		p := place(u)
		require.True(t, p.PassExpiry.IsZero(), "%s (rank %d) holds no pass", u, p.Rank)
		require.Equal(t, int64(6), p.Serving)
	}
	buy(order[5])
	av, err := inv.Available(ctx, sku)
	require.NoError(t, err)
	require.Zero(t, av.Units)
	b, err := st.BoardOf(ctx, sku)
	require.NoError(t, err)
	require.Equal(t, int64(6), b.Serving, "6 passes for 6 units sold (one given back)")
	require.Equal(t, int64(6), b.Spent)
	require.Zero(t, b.Outstanding)
	require.True(t, place(order[6]).SoldOut)
}
