//go:build integration

package inventory

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/flashsale/flashsale"

	"github.com/stretchr/testify/require"
)

func TestWaitlistKeySlots(t *testing.T) {
	sku := "sku-42"
	slot := keySlot(bucketsKey(sku))
	for _, k := range []string{waitlistKey(sku), waitlistUsersKey(sku), waitlistRankedKey(sku), offerKey(sku, "order-{x}"), waitlistOffersKey(sku), saleKey(sku)} {
		require.Equal(t, slot, keySlot(k), "waitlist key %s must share the SKU slot", k)
	}
}

func TestWaitlistJoin(t *testing.T) {
	s, rdb := newStore(t)
	ctx := context.Background()
	sku := newSKU(t, rdb)

	_, err := s.JoinWaitlist(ctx, sku, "u1", 10)
	require.ErrorIs(t, err, &flashsale.Error{Code: flashsale.UnknownSKU})

	_, err = s.Preheat(ctx, sku, 1, 4)
	require.NoError(t, err)
	_, err = s.JoinWaitlist(ctx, sku, "u1", 10)
	require.ErrorIs(t, err, &flashsale.Error{Code: flashsale.NotSoldOut}, "a unit is on sale: buy it")
	_, err = s.JoinWaitlist(ctx, sku, "", 10)
	require.ErrorIs(t, err, &flashsale.Error{Code: flashsale.Invalid})

	_, err = s.Reserve(ctx, "A", sku, 1)
	require.NoError(t, err)
	e, err := s.JoinWaitlist(ctx, sku, "u1", 10)
	require.NoError(t, err)
	require.Equal(t, WaitlistEntry{SKU: sku, UserID: "u1", Position: 1, Joined: true}, e)
	e, err = s.JoinWaitlist(ctx, sku, "u2", 10)
	require.NoError(t, err)
	require.Equal(t, int64(2), e.Position)
	// A repeated join keeps the place in line.
	e, err = s.JoinWaitlist(ctx, sku, "u1", 10)
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
		_, err := s.JoinWaitlist(ctx, sku, u, 10)
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
	_, err = s.JoinWaitlist(ctx, sku, "u3", 10)
	require.NoError(t, err)
	u, err = s.PopWaitlist(ctx, sku, "rel-3")
	require.NoError(t, err)
	require.Empty(t, u)
	// A popped user may join again.
	e, err := s.JoinWaitlist(ctx, sku, "u1", 10)
	require.NoError(t, err)
	require.Equal(t, int64(2), e.Position)
}

// TestWaitlistCapacity: concurrent joins never push the list past its
// capacity; exactly capacity buyers get a place, the rest &flashsale.Error{Code: flashsale.WaitlistFull},
// and a buyer already waiting keeps their answer when the list is full.
func TestWaitlistCapacity(t *testing.T) {
	s, rdb := newStore(t)
	ctx := context.Background()
	sku := newSKU(t, rdb)
	_, err := s.Preheat(ctx, sku, 1, 1)
	require.NoError(t, err)
	_, err = s.Reserve(ctx, "A", sku, 1)
	require.NoError(t, err)

	const capacity, joiners = 7, 50
	var joined, full atomic.Int64
	var wg sync.WaitGroup
	for i := range joiners {
		wg.Go(func() {
			_, err := s.JoinWaitlist(ctx, sku, fmt.Sprintf("u%d", i), capacity)
			switch {
			case err == nil:
				joined.Add(1)
			case errors.Is(err, &flashsale.Error{Code: flashsale.WaitlistFull}):
				full.Add(1)
			default:
				t.Errorf("join u%d: %v", i, err)
			}
		})
	}
	wg.Wait()
	require.Equal(t, int64(capacity), joined.Load())
	require.Equal(t, int64(joiners-capacity), full.Load())
	require.Equal(t, int64(capacity), rdb.LLen(ctx, waitlistKey(sku)).Val())

	first := rdb.LIndex(ctx, waitlistKey(sku), 0).Val()
	e, err := s.JoinWaitlist(ctx, sku, first, capacity)
	require.NoError(t, err, "a waiting buyer's repeat is answered even when full")
	require.Equal(t, int64(1), e.Position)
}

// TestWaitlistPlace: a waiting buyer sees their position; once popped, the
// released order whose units they were offered; anyone else &flashsale.Error{Code: flashsale.NotOnWaitlist}.
func TestWaitlistPlace(t *testing.T) {
	s, rdb := newStore(t)
	ctx := context.Background()
	sku := newSKU(t, rdb)
	_, err := s.Preheat(ctx, sku, 1, 1)
	require.NoError(t, err)
	_, err = s.Reserve(ctx, "A", sku, 1)
	require.NoError(t, err)
	for _, u := range []string{"u1", "u2"} {
		_, err := s.JoinWaitlist(ctx, sku, u, 10)
		require.NoError(t, err)
	}
	p, err := s.WaitlistPlace(ctx, sku, "u2")
	require.NoError(t, err)
	require.Equal(t, WaitlistPlace{Position: 2}, p)

	u, err := s.PopWaitlist(ctx, sku, "A")
	require.NoError(t, err)
	require.Equal(t, "u1", u)
	p, err = s.WaitlistPlace(ctx, sku, "u1")
	require.NoError(t, err)
	require.Equal(t, WaitlistPlace{OfferedFrom: "A"}, p)
	p, err = s.WaitlistPlace(ctx, sku, "u2")
	require.NoError(t, err)
	require.Equal(t, WaitlistPlace{Position: 1}, p, "u2 moved up")

	_, err = s.WaitlistPlace(ctx, sku, "mallory")
	require.ErrorIs(t, err, &flashsale.Error{Code: flashsale.NotOnWaitlist})
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
	require.ErrorIs(t, err, &flashsale.Error{Code: flashsale.AlreadyReleased})
	require.Equal(t, before.PerBucket, stock(t, s, sku).PerBucket)

	// B's units are real: releasing B puts them on open sale.
	n, err = s.Release(ctx, "B", sku)
	require.NoError(t, err)
	require.Equal(t, int64(2), n)
	require.Equal(t, int64(3), stock(t, s, sku).Available)
	// Transfer after B's release: refused, nothing created.
	_, err = s.Transfer(ctx, "A", "B", sku, 2)
	require.ErrorIs(t, err, &flashsale.Error{Code: flashsale.AlreadyReleased})
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
	require.ErrorIs(t, err, &flashsale.Error{Code: flashsale.SoldOut})
	require.Equal(t, int64(2), stock(t, s, sku).Available)

	// A quantity mismatch hands nothing on: the units go back on sale.
	_, err = s.Reserve(ctx, "C", sku, 2)
	require.NoError(t, err)
	require.Zero(t, stock(t, s, sku).Available)
	_, err = s.Transfer(ctx, "C", "D", sku, 1)
	require.ErrorIs(t, err, &flashsale.Error{Code: flashsale.SoldOut})
	require.Equal(t, int64(2), stock(t, s, sku).Available, "neither order keeps a unit")

	_, err = s.Transfer(ctx, "X", "X", sku, 1)
	require.ErrorIs(t, err, &flashsale.Error{Code: flashsale.Invalid})
}

// A fair sale's buyers wait in rank order whenever each joins, ahead of
// anyone on the FIFO list; a repeat keeps the place; the capacity counts
// both; pops serve the best rank first; closing empties the waitlist.
func TestWaitlistRanked(t *testing.T) {
	s, rdb := newStore(t)
	ctx := context.Background()
	sku := newSKU(t, rdb)
	_, err := s.Preheat(ctx, sku, 0, 2)
	require.NoError(t, err)

	fifo, err := s.JoinWaitlist(ctx, sku, "fifo", 5)
	require.NoError(t, err)
	require.EqualValues(t, 1, fifo.Position)
	for _, j := range []struct {
		user string
		rank int64
		pos  int64
	}{{"r7", 7, 1}, {"r3", 3, 1}, {"r9", 9, 3}, {"r5", 5, 2}} {
		e, err := s.JoinWaitlistRanked(ctx, sku, j.user, j.rank, 5)
		require.NoError(t, err)
		require.True(t, e.Joined)
		require.Equal(t, j.pos, e.Position, "%s joins at its rank", j.user)
	}
	again, err := s.JoinWaitlistRanked(ctx, sku, "r5", 5, 5)
	require.NoError(t, err)
	require.False(t, again.Joined)
	require.EqualValues(t, 2, again.Position)
	_, err = s.JoinWaitlistRanked(ctx, sku, "r1", 1, 5)
	require.ErrorIs(t, err, &flashsale.Error{Code: flashsale.WaitlistFull}, "five wait: the list and the ranked alike")
	p, err := s.WaitlistPlace(ctx, sku, "fifo")
	require.NoError(t, err)
	require.EqualValues(t, 5, p.Position, "behind the four ranked buyers")
	n, err := s.WaitlistLength(ctx, sku)
	require.NoError(t, err)
	require.EqualValues(t, 5, n)

	var served []string
	for i := range 6 {
		u, err := s.PopWaitlist(ctx, sku, fmt.Sprintf("released-%d", i))
		require.NoError(t, err)
		served = append(served, u)
	}
	require.Equal(t, []string{"r3", "r5", "r7", "r9", "fifo", ""}, served)

	_, err = s.JoinWaitlistRanked(ctx, sku, "r2", 2, 5)
	require.NoError(t, err)
	require.NoError(t, s.CloseWaitlist(ctx, sku))
	n, err = s.WaitlistLength(ctx, sku)
	require.NoError(t, err)
	require.Zero(t, n)
	_, err = s.WaitlistPlace(ctx, sku, "r2")
	require.ErrorIs(t, err, &flashsale.Error{Code: flashsale.NotOnWaitlist})
	p, err = s.WaitlistPlace(ctx, sku, "r3")
	require.NoError(t, err)
	require.Equal(t, "released-0", p.OfferedFrom, "offers made stay readable")
}

// While the SKU's fair sale is PAUSED a released unit is offered to nobody
// (issue 35, 7: it became a waiting buyer's PENDING_PAYMENT order during
// the pause): the release is recorded as offered to nobody, so a retry
// after the resume changes nothing, and the waiting buyer keeps their
// place for the next unit released once the sale is OPEN again.
func TestWaitlistOffersNothingWhileTheSaleIsPaused(t *testing.T) {
	s, rdb := newStore(t)
	ctx := context.Background()
	sku := newSKU(t, rdb)
	_, err := s.Preheat(ctx, sku, 0, 2)
	require.NoError(t, err)
	_, err = s.JoinWaitlistRanked(ctx, sku, "r4", 4, 5)
	require.NoError(t, err)
	require.NoError(t, rdb.HSet(ctx, saleKey(sku), "state", "PAUSED").Err())

	u, err := s.PopWaitlist(ctx, sku, "released-1")
	require.NoError(t, err)
	require.Empty(t, u, "paused: nobody is offered the unit")
	p, err := s.WaitlistPlace(ctx, sku, "r4")
	require.NoError(t, err)
	require.EqualValues(t, 1, p.Position, "still waiting, first")

	require.NoError(t, rdb.HSet(ctx, saleKey(sku), "state", "OPEN").Err())
	u, err = s.PopWaitlist(ctx, sku, "released-1")
	require.NoError(t, err)
	require.Empty(t, u, "a retry of the paused release stays no offer")
	u, err = s.PopWaitlist(ctx, sku, "released-2")
	require.NoError(t, err)
	require.Equal(t, "r4", u, "open again: the next release is offered")
}
