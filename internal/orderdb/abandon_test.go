//go:build integration

package orderdb_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/internal/orderdb"

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

// An id taken by another order is not a retry of it (issue 21: a second
// waitlist offer under a colliding id was handed the first one's PAID order
// of another SKU): another buyer, another SKU or another quantity under the
// id is OrderIDConflict and moves nothing; the same order again is its
// retry and gets the stored order back.
func TestCreateOrderUnderATakenID(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	putSKU(t, s, "tk", 5, 100)
	putSKU(t, s, "tk2", 5, 700)
	first := createOrder(t, s, "tk-1", item("tk", 1))

	for name, o := range map[string]orderdb.NewOrder{
		"another buyer":    newOrder("tk-1", "someone-else", item("tk", 1)),
		"another sku":      newOrder("tk-1", first.UserID, item("tk2", 1)),
		"another quantity": newOrder("tk-1", first.UserID, item("tk", 2)),
		"another line too": newOrder("tk-1", first.UserID, item("tk", 1), item("tk2", 1)),
	} {
		_, err := s.CreateOrder(ctx, o)
		require.Equal(t, flashsale.OrderIDConflict, flashsale.ErrorCode(err), "%s: %v", name, err)
	}
	require.EqualValues(t, 4, inventory(t, s, "tk").Available, "only the first order froze a unit")
	require.EqualValues(t, 5, inventory(t, s, "tk2").Available)

	again, err := s.CreateOrder(ctx, newOrder("tk-1", first.UserID, item("tk", 1)))
	require.NoError(t, err, "the same order again is its retry")
	require.Equal(t, first.Amount, again.Amount)
	require.Equal(t, first.PayBy, again.PayBy)
}
