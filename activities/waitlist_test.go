//go:build integration

package activities_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/activities/contract"
)

// The offer path as the workflows drive it, on real Redis: the released
// order's unit is popped for the first waiting user, handed to the offer
// without touching open sale, and released to open sale with both orders'
// markers when the offer closes.
func TestWaitlistOfferActivities(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	sku := f.sku(t, "wl", 1, 1)
	item := []flashsale.Item{{SKU: sku, Quantity: 1}}
	a, offer := f.prefix+"A", f.prefix+"wl-A"

	_, err := f.acts.ReserveStock(ctx, contract.ReserveStockInput{OrderID: a, Items: item})
	require.NoError(t, err)
	_, err = f.stock.JoinWaitlist(ctx, sku, "u-b", 10)
	require.NoError(t, err)

	for range 2 { // a retry after a lost reply names the same user
		got, err := f.acts.OfferToWaitlist(ctx, contract.OfferToWaitlistInput{ReleasedOrderID: a, SKU: sku})
		require.NoError(t, err)
		require.Equal(t, "u-b", got.UserID)
	}
	for range 2 {
		res, err := f.acts.ReserveStock(ctx, contract.ReserveStockInput{OrderID: offer, Items: item, FromOrder: a})
		require.NoError(t, err)
		require.Len(t, res.Reservations, 1)
		require.Equal(t, int64(1), res.Reservations[0].Quantity)
		require.Zero(t, f.redisAvailable(t, sku), "the unit never reached open sale")
	}

	rel, err := f.acts.ReleaseStock(ctx, contract.ReleaseStockInput{OrderID: offer, Items: item, FromOrder: a})
	require.NoError(t, err)
	require.Equal(t, int64(1), rel.Released)
	require.Equal(t, int64(1), f.redisAvailable(t, sku))

	// Nobody waits any more: the next release goes to open sale.
	got, err := f.acts.OfferToWaitlist(ctx, contract.OfferToWaitlistInput{ReleasedOrderID: offer, SKU: sku})
	require.NoError(t, err)
	require.Empty(t, got.UserID)

	// An offer whose released order holds nothing is sold out, and
	// invents no unit.
	_, err = f.acts.ReserveStock(ctx, contract.ReserveStockInput{OrderID: f.prefix + "wl-X", Items: item, FromOrder: f.prefix + "X"})
	require.Equal(t, contract.TypeFor(flashsale.SoldOut), appErrType(err))
	require.Equal(t, int64(1), f.redisAvailable(t, sku))

	// Only single-item offers exist.
	_, err = f.acts.ReserveStock(ctx, contract.ReserveStockInput{OrderID: f.prefix + "wl-Y", FromOrder: a,
		Items: []flashsale.Item{{SKU: sku, Quantity: 1}, {SKU: sku + "-2", Quantity: 1}}})
	require.Equal(t, contract.TypeFor(flashsale.Invalid), appErrType(err))
}
