//go:build integration

package orderdb_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/flashsale/flashsale"

	"github.com/stretchr/testify/require"
)

func TestAbandonOrder(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	putSKU(t, s, "ab", 5, 100)

	// The create committed before the abandon: closed like any order.
	createOrder(t, s, "ab-1", item("ab", 1))
	o, err := s.AbandonOrder(ctx, "ab-1", "UNAVAILABLE")
	require.NoError(t, err)
	require.Equal(t, flashsale.StatusCancelled, o.Status)
	require.EqualValues(t, 5, inventory(t, s, "ab").Available)

	// The create never reached MySQL: a tombstone, and a late attempt of
	// the same id moves nothing.
	o, err = s.AbandonOrder(ctx, "ab-2", "UNAVAILABLE")
	require.NoError(t, err)
	require.Equal(t, flashsale.StatusCancelled, o.Status)
	require.Empty(t, o.Items)
	late, err := s.CreateOrder(ctx, newOrder("ab-2", "late", item("ab", 1)))
	require.NoError(t, err, "the id exists: its order is returned")
	require.Equal(t, flashsale.StatusCancelled, late.Status)
	require.EqualValues(t, 5, inventory(t, s, "ab").Available, "the late attempt froze nothing")
	again, err := s.AbandonOrder(ctx, "ab-2", "UNAVAILABLE")
	require.NoError(t, err, "idempotent")
	require.Equal(t, o.Reason, again.Reason)
}

// A late CreateOrder racing the abandon of the same id, many times over:
// whichever wins, the order ends CANCELLED and no unit stays frozen.
func TestAbandonRacesLateCreate(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	const n = 40
	putSKU(t, s, "race", n, 100)

	fns := make([]func(), 0, 2*n)
	errs := make([]error, 2*n)
	for i := range n {
		id := fmt.Sprintf("race-%02d", i)
		fns = append(fns,
			func() { _, errs[2*i] = s.CreateOrder(ctx, newOrder(id, "u-"+id, item("race", 1))) },
			func() { _, errs[2*i+1] = s.AbandonOrder(ctx, id, "UNAVAILABLE") },
		)
	}
	run(fns)
	for i, err := range errs {
		require.NoError(t, err, "call %d", i)
	}
	for i := range n {
		o, err := s.Order(ctx, fmt.Sprintf("race-%02d", i))
		require.NoError(t, err)
		require.Equal(t, flashsale.StatusCancelled, o.Status)
	}
	inv := inventory(t, s, "race")
	require.EqualValues(t, n, inv.Available)
	require.Zero(t, inv.Frozen)
}
