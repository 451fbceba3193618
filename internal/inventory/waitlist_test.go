package inventory

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestWaitlistKeySlots(t *testing.T) {
	sku := "sku-42"
	slot := keySlot(bucketsKey(sku))
	for _, k := range []string{waitlistKey(sku), waitlistUsersKey(sku), offerKey(sku, "order-{x}")} {
		require.Equal(t, slot, keySlot(k), "waitlist key %s must share the SKU slot", k)
	}
}

func TestWaitlistJoin(t *testing.T) {
	s, rdb := newStore(t)
	ctx := context.Background()
	sku := newSKU(t, rdb)

	_, err := s.JoinWaitlist(ctx, sku, "u1")
	require.ErrorIs(t, err, ErrUnknownSKU)

	_, err = s.Preheat(ctx, sku, 1, 4)
	require.NoError(t, err)
	_, err = s.JoinWaitlist(ctx, sku, "u1")
	require.ErrorIs(t, err, ErrNotSoldOut, "a unit is on sale: buy it")
	_, err = s.JoinWaitlist(ctx, sku, "")
	require.ErrorIs(t, err, ErrInvalidArgument)

	_, err = s.Reserve(ctx, "A", sku, 1)
	require.NoError(t, err)
	e, err := s.JoinWaitlist(ctx, sku, "u1")
	require.NoError(t, err)
	require.Equal(t, WaitlistEntry{SKU: sku, UserID: "u1", Position: 1, Joined: true}, e)
	e, err = s.JoinWaitlist(ctx, sku, "u2")
	require.NoError(t, err)
	require.Equal(t, int64(2), e.Position)
	// A repeated join keeps the place in line.
	e, err = s.JoinWaitlist(ctx, sku, "u1")
	require.NoError(t, err)
	require.Equal(t, WaitlistEntry{SKU: sku, UserID: "u1", Position: 1, Joined: false}, e)
	require.Equal(t, int64(2), rdb.LLen(ctx, waitlistKey(sku)).Val())
}

func TestWaitlistPopIdempotentPerRelease(t *testing.T) {
	s, rdb := newStore(t)
	ctx := context.Background()
	sku := newSKU(t, rdb)
	_, err := s.Preheat(ctx, sku, 1, 2)
	require.NoError(t, err)
	_, err = s.Reserve(ctx, "A", sku, 1)
	require.NoError(t, err)
	for _, u := range []string{"u1", "u2"} {
		_, err := s.JoinWaitlist(ctx, sku, u)
		require.NoError(t, err)
	}

	for range 3 { // first call plus retries after lost replies
		u, err := s.PopWaitlist(ctx, sku, "rel-1")
		require.NoError(t, err)
		require.Equal(t, "u1", u)
	}
	u, err := s.PopWaitlist(ctx, sku, "rel-2")
	require.NoError(t, err)
	require.Equal(t, "u2", u)
	// Nobody left: recorded as nobody, and a later join does not change a
	// retry's answer.
	u, err = s.PopWaitlist(ctx, sku, "rel-3")
	require.NoError(t, err)
	require.Empty(t, u)
	_, err = s.JoinWaitlist(ctx, sku, "u3")
	require.NoError(t, err)
	u, err = s.PopWaitlist(ctx, sku, "rel-3")
	require.NoError(t, err)
	require.Empty(t, u)
	// A popped user may join again.
	e, err := s.JoinWaitlist(ctx, sku, "u1")
	require.NoError(t, err)
	require.Equal(t, int64(2), e.Position)
}

func TestTransfer(t *testing.T) {
	s, rdb := newStore(t)
	ctx := context.Background()
	sku := newSKU(t, rdb)
	_, err := s.Preheat(ctx, sku, 3, 4)
	require.NoError(t, err)
	// A takes 2 units, from two buckets (a bucket holds at most 1).
	a, err := s.Reserve(ctx, "A", sku, 2)
	require.NoError(t, err)
	require.Len(t, a.Parts, 2)
	before := stock(t, s, sku)
	require.Equal(t, int64(1), before.Available)

	for range 3 { // first call plus retries
		r, err := s.Transfer(ctx, "A", "B", sku, 2)
		require.NoError(t, err)
		require.Equal(t, a, r, "B holds exactly what A held, bucket by bucket")
		require.Equal(t, before.PerBucket, stock(t, s, sku).PerBucket, "no bucket stock moved")
	}
	for _, p := range a.Parts {
		require.Equal(t, "r1", rdb.Get(ctx, orderKey(sku, p.Bucket, "A")).Val(), "A's marker is a released marker")
		require.Equal(t, "1", rdb.Get(ctx, orderKey(sku, p.Bucket, "B")).Val())
	}
	// A late release or reserve of A moves nothing now.
	n, err := s.Release(ctx, "A", sku)
	require.NoError(t, err)
	require.Zero(t, n)
	_, err = s.Reserve(ctx, "A", sku, 2)
	require.ErrorIs(t, err, ErrReleased)
	require.Equal(t, before.PerBucket, stock(t, s, sku).PerBucket)

	// B's units are real: releasing B puts them on open sale.
	n, err = s.Release(ctx, "B", sku)
	require.NoError(t, err)
	require.Equal(t, int64(2), n)
	require.Equal(t, int64(3), stock(t, s, sku).Available)
	// Transfer after B's release: refused, nothing created.
	_, err = s.Transfer(ctx, "A", "B", sku, 2)
	require.ErrorIs(t, err, ErrReleased)
	require.Equal(t, int64(3), stock(t, s, sku).Available)
}

func TestTransferFailedHandOverReleasesEverything(t *testing.T) {
	s, rdb := newStore(t)
	ctx := context.Background()
	sku := newSKU(t, rdb)
	_, err := s.Preheat(ctx, sku, 2, 2)
	require.NoError(t, err)

	// The giving order holds nothing (released already): sold out, and
	// nothing is created.
	_, err = s.Reserve(ctx, "A", sku, 1)
	require.NoError(t, err)
	_, err = s.Release(ctx, "A", sku)
	require.NoError(t, err)
	_, err = s.Transfer(ctx, "A", "B", sku, 1)
	require.ErrorIs(t, err, ErrSoldOut)
	require.Equal(t, int64(2), stock(t, s, sku).Available)

	// A quantity mismatch hands nothing on: the units go back on sale.
	_, err = s.Reserve(ctx, "C", sku, 2)
	require.NoError(t, err)
	require.Zero(t, stock(t, s, sku).Available)
	_, err = s.Transfer(ctx, "C", "D", sku, 1)
	require.ErrorIs(t, err, ErrSoldOut)
	require.Equal(t, int64(2), stock(t, s, sku).Available, "neither order keeps a unit")

	_, err = s.Transfer(ctx, "X", "X", sku, 1)
	require.ErrorIs(t, err, ErrInvalidArgument)
}
