//go:build integration

package inventory

import (
	"context"
	"testing"

	"github.com/flashsale/flashsale"

	"github.com/stretchr/testify/require"
)

func TestAvailableAndMarkSoldOut(t *testing.T) {
	s, rdb := newStore(t)
	ctx := context.Background()
	sku := newSKU(t, rdb)

	_, err := s.Available(ctx, sku)
	require.ErrorIs(t, err, &flashsale.Error{Code: flashsale.UnknownSKU})
	_, err = s.Available(ctx, "a{b")
	require.ErrorIs(t, err, &flashsale.Error{Code: flashsale.Invalid})

	_, err = s.Preheat(ctx, sku, 3, 4)
	require.NoError(t, err)
	av, err := s.Available(ctx, sku)
	require.NoError(t, err)
	require.Equal(t, int64(3), av.Units)
	require.Equal(t, 4, av.Buckets)

	// A tampered negative bucket counts as empty, never as debt.
	require.NoError(t, rdb.Set(ctx, stockKey(sku, 3), -5, 0).Err())
	av, err = s.Available(ctx, sku)
	require.NoError(t, err)
	require.Equal(t, int64(3), av.Units)

	for i := range 3 {
		_, err := s.Reserve(ctx, "o"+string(rune('a'+i)), sku, 1)
		require.NoError(t, err)
	}
	empty, err := s.Available(ctx, sku)
	require.NoError(t, err)
	require.Zero(t, empty.Units)

	// A stale observation (a unit came back after the read) sets nothing.
	_, err = s.Release(ctx, "oa", sku)
	require.NoError(t, err)
	set, err := s.MarkSoldOut(ctx, sku, empty.Gen)
	require.NoError(t, err)
	require.False(t, set)
	require.False(t, stock(t, s, sku).SoldOut)

	// A current one does.
	_, err = s.Reserve(ctx, "od", sku, 1)
	require.NoError(t, err)
	empty, err = s.Available(ctx, sku)
	require.NoError(t, err)
	require.Zero(t, empty.Units)
	set, err = s.MarkSoldOut(ctx, sku, empty.Gen)
	require.NoError(t, err)
	require.True(t, set)
	soldOut, err := s.SoldOut(ctx, sku)
	require.NoError(t, err)
	require.True(t, soldOut)
}

// The stock read says how a SKU deducts, as book.lua tells it: by its count
// of bookings left. Units of a SKU sold at payment are bounded by that count;
// the count is read with the sold-out flag set too, and shown by Stock.
func TestAvailableSaysHowTheSKUDeducts(t *testing.T) {
	s, rdb := newStore(t)
	ctx := context.Background()
	sku := newSKU(t, rdb)
	_, err := s.Preheat(ctx, sku, 3, 2)
	require.NoError(t, err)
	av, err := s.Available(ctx, sku)
	require.NoError(t, err)
	require.Equal(t, flashsale.DeductHold, av.Deduct)
	require.Nil(t, stock(t, s, sku).BookingsLeft)

	require.NoError(t, s.SetBookings(ctx, sku, 2))
	av, err = s.Available(ctx, sku)
	require.NoError(t, err)
	require.Equal(t, Availability{Buckets: 2, Gen: av.Gen, Units: 2, Deduct: flashsale.DeductPayment}, av)
	b, err := s.Book(ctx, "o1", sku, 1)
	require.NoError(t, err)
	require.Equal(t, Booked, b)
	require.Equal(t, new(int64(1)), stock(t, s, sku).BookingsLeft)

	require.NoError(t, rdb.Set(ctx, soldOutKey(sku), 1, 0).Err())
	av, err = s.Available(ctx, sku)
	require.NoError(t, err)
	require.True(t, av.SoldOut)
	require.Equal(t, flashsale.DeductPayment, av.Deduct)
}
