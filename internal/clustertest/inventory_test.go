//go:build integration

package clustertest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/internal/inventory"
)

// TestReserveExactlyStockOnCluster: N units in 16 buckets spread over all
// three masters, M > N buyers at once; exactly N win, nobody twice, the
// rest are told sold out, the sold-out flag is set, and what Redis holds
// (SCAN of every master for markers) names exactly the winners.
func TestReserveExactlyStockOnCluster(t *testing.T) {
	const units, buyers, buckets = 200, 600, 16
	rdb := newClient(t, useCluster(t, false))
	st := inventory.New(rdb, testOpts)
	ctx := context.Background()
	sku := newSKU(t, rdb)

	res, err := st.Preheat(ctx, sku, units, buckets)
	require.NoError(t, err)
	require.Equal(t, int64(units), res.RedisAvailable)
	masters := bucketMasters(ctx, t, rdb, sku, buckets)
	require.Len(t, masters, 3, "the buckets must land on every master, or the test proves nothing cross-node: %v", masters)
	t.Logf("buckets per master: %v", masters)

	// A dial that times out while 600 callers open connections to three
	// nodes at once on a loaded machine is an outage the order's activity
	// retries (Reserve is idempotent per order id); the test retries it
	// too, and only it, within a minute.
	s := newSale()
	s.onRetry = func(err error) {
		if flashsale.ErrorCode(err) != flashsale.Unavailable {
			t.Errorf("retried an answer that is not an outage: %v", err)
		}
	}
	buyCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	start := time.Now()
	buy(buyCtx, st, sku, orderIDs("o", buyers), 1, buyers, true, s)
	t.Logf("%d buyers for %d units: %d won, %d sold out, %d errors in %v",
		buyers, units, len(s.won), s.soldOut, len(s.errs), time.Since(start))
	require.Empty(t, s.errs)
	require.Len(t, s.won, units, "exactly the stock is sold")
	require.Equal(t, buyers-units, s.soldOut)

	stk, err := st.Stock(ctx, sku)
	require.NoError(t, err)
	require.Zero(t, stk.Available)
	soldOut, err := st.SoldOut(ctx, sku)
	require.NoError(t, err)
	require.True(t, soldOut, "probing every bucket empty sets the flag")
	held, n := heldTotal(ctx, t, st, sku)
	require.Equal(t, int64(units), n)
	require.Len(t, held, units)
	for id := range s.won {
		require.Equal(t, int64(1), held[id], "winner %s holds its unit", id)
	}

	// Replays answer what the first attempt got.
	for id, r := range s.won {
		again, err := st.Reserve(ctx, id, sku, 1)
		require.NoError(t, err)
		require.Equal(t, r, again)
		break
	}
	_, err = st.Reserve(ctx, "o-late", sku, 1)
	require.Equal(t, flashsale.SoldOut, flashsale.ErrorCode(err))
}

// TestMultiUnitAllOrNothingOnCluster: orders of 3 units take from buckets
// on different masters; an order that cannot be served in full gives back
// what it took on every node.
func TestMultiUnitAllOrNothingOnCluster(t *testing.T) {
	rdb := newClient(t, useCluster(t, false))
	st := inventory.New(rdb, testOpts)
	ctx := context.Background()
	sku := newSKU(t, rdb)
	_, err := st.Preheat(ctx, sku, 10, 8) // buckets of 1 or 2: every order spans buckets
	require.NoError(t, err)

	s := newSale()
	buy(ctx, st, sku, orderIDs("m", 12), 3, 12, false, s)
	require.Empty(t, s.errs)
	// Racing partial takes may make more orders give up than strictly
	// needed (each sees the others' units held); none is ever partial.
	require.LessOrEqual(t, len(s.won), 3)
	for id, r := range s.won {
		require.Equal(t, int64(3), r.Quantity)
		require.Greater(t, len(r.Parts), 1, "order %s took from several buckets", id)
	}
	requireConserved(ctx, t, st, sku, 10)
	// One at a time, later orders take what the losers gave back.
	rest := newSale()
	buy(ctx, st, sku, orderIDs("n", 4), 3, 1, false, rest)
	require.Empty(t, rest.errs)
	require.Equal(t, int64(9), s.units()+rest.units())
	inBuckets, held := requireConserved(ctx, t, st, sku, 10)
	require.Equal(t, int64(1), inBuckets, "losers gave back every partial take")
	require.Equal(t, int64(9), held)
}

// TestReleaseRestockSoldOutAndPubSub: the sold-out flag comes and goes
// with the stock, and every stock increase made through one client is
// heard by a subscriber on another (bump.lua PUBLISHes on the SKU's
// master; the cluster bus carries it to every node).
func TestReleaseRestockSoldOutAndPubSub(t *testing.T) {
	addr := useCluster(t, false)
	rdb, other := newClient(t, addr), newClient(t, addr)
	st := inventory.New(rdb, testOpts)
	ctx := context.Background()
	sku := newSKU(t, rdb)

	ps := other.Subscribe(ctx, inventory.StockChangedChannel)
	t.Cleanup(func() { _ = ps.Close() })
	_, err := ps.Receive(ctx) // the subscription's confirmation
	require.NoError(t, err)
	heard := func(what string) {
		t.Helper()
		timeout := time.After(5 * time.Second)
		for {
			select {
			case m := <-ps.Channel():
				if m.Payload == sku {
					return
				}
			case <-timeout:
				t.Fatalf("%s: no stock-changed message for %s on the other client", what, sku)
			}
		}
	}

	_, err = st.Preheat(ctx, sku, 4, 4)
	require.NoError(t, err)
	heard("preheat")

	for _, id := range []string{"a", "b", "c", "d"} {
		_, err := st.Reserve(ctx, id, sku, 1)
		require.NoError(t, err)
	}
	_, err = st.Reserve(ctx, "e", sku, 1)
	require.Equal(t, flashsale.SoldOut, flashsale.ErrorCode(err))
	soldOut, err := st.SoldOut(ctx, sku)
	require.NoError(t, err)
	require.True(t, soldOut)
	av, err := st.Available(ctx, sku)
	require.NoError(t, err)
	require.True(t, av.SoldOut)

	n, err := st.Release(ctx, "a", sku)
	require.NoError(t, err)
	require.Equal(t, int64(1), n)
	heard("release")
	soldOut, err = st.SoldOut(ctx, sku)
	require.NoError(t, err)
	require.False(t, soldOut, "a released unit clears the flag")
	n, err = st.Release(ctx, "a", sku)
	require.NoError(t, err)
	require.Zero(t, n, "release is idempotent")
	_, err = st.Reserve(ctx, "a", sku, 1)
	require.Equal(t, flashsale.AlreadyReleased, flashsale.ErrorCode(err))

	added, err := st.Restock(ctx, sku, "r1", 5)
	require.NoError(t, err)
	require.True(t, added)
	heard("restock")
	added, err = st.Restock(ctx, sku, "r1", 5)
	require.NoError(t, err)
	require.False(t, added, "a repeated restock adds nothing")
	stk, err := st.Stock(ctx, sku)
	require.NoError(t, err)
	require.Equal(t, int64(6), stk.Available)

	// A sold-out observation older than the last increase is refused.
	av, err = st.Available(ctx, sku)
	require.NoError(t, err)
	_, err = st.Restock(ctx, sku, "r2", 1)
	require.NoError(t, err)
	set, err := st.MarkSoldOut(ctx, sku, av.Gen)
	require.NoError(t, err)
	require.False(t, set)
	av, err = st.Available(ctx, sku)
	require.NoError(t, err)
	set, err = st.MarkSoldOut(ctx, sku, av.Gen)
	require.NoError(t, err)
	require.True(t, set, "a current observation sets it (the flag is only a hint)")

	requireConserved(ctx, t, st, sku, 4+5+1)
}

// TestResizeUnderLoadOnCluster: the bucket count changes three times while
// buyers reserve; moves cross slots (and masters) as two scripts joined by
// a move id. Every unit is sold exactly once in the end.
func TestResizeUnderLoadOnCluster(t *testing.T) {
	const units = 300
	rdb := newClient(t, useCluster(t, false))
	st := inventory.New(rdb, testOpts)
	ctx := context.Background()
	sku := newSKU(t, rdb)
	_, err := st.Preheat(ctx, sku, units, 4)
	require.NoError(t, err)

	// A unit held from before the resizes, released after them.
	early, err := st.Reserve(ctx, "early", sku, 1)
	require.NoError(t, err)

	s := newSale()
	done := make(chan struct{})
	go func() {
		defer close(done)
		buy(ctx, st, sku, orderIDs("z", 3*units), 1, 32, false, s)
	}()
	var moved int64
	for _, n := range []int{16, 3, 8} {
		r, err := st.Resize(ctx, sku, n)
		require.NoError(t, err)
		require.Equal(t, n, r.Buckets)
		moved += r.Moved
	}
	<-done
	require.Empty(t, s.errs)
	t.Logf("resized 4 -> 16 -> 3 -> 8 under %d buyers: %d units moved between buckets, %d sold",
		3*units, moved, len(s.won))

	n, err := st.Release(ctx, "early", sku)
	require.NoError(t, err)
	require.Equal(t, early.Quantity, n)

	// Buyers told sold out while units were in transit leave some behind;
	// later buyers take exactly what is left.
	inBuckets, _ := requireConserved(ctx, t, st, sku, units)
	rest := newSale()
	buy(ctx, st, sku, orderIDs("y", int(inBuckets)+20), 1, 16, false, rest)
	require.Empty(t, rest.errs)
	require.Len(t, rest.won, int(inBuckets))
	require.Equal(t, int64(units), s.units()+rest.units(), "every unit sold exactly once")
	inBuckets, held := requireConserved(ctx, t, st, sku, units)
	require.Zero(t, inBuckets)
	require.Equal(t, int64(units), held)
	stk, err := st.Stock(ctx, sku)
	require.NoError(t, err)
	require.Equal(t, 8, stk.Buckets)
}

// TestWaitlistOnCluster: join, place, pop and the hand-over of a released
// order's unit to the waiting buyer's order (transfer.lua, both markers in
// the bucket's slot).
func TestWaitlistOnCluster(t *testing.T) {
	rdb := newClient(t, useCluster(t, false))
	st := inventory.New(rdb, testOpts)
	ctx := context.Background()
	sku := newSKU(t, rdb)
	_, err := st.Preheat(ctx, sku, 3, 4)
	require.NoError(t, err)
	_, err = st.JoinWaitlist(ctx, sku, "u0", 10)
	require.Equal(t, flashsale.NotSoldOut, flashsale.ErrorCode(err))

	a, err := st.Reserve(ctx, "A", sku, 2)
	require.NoError(t, err)
	_, err = st.Reserve(ctx, "B", sku, 1)
	require.NoError(t, err)

	for i, u := range []string{"u1", "u2", "u1"} {
		e, err := st.JoinWaitlist(ctx, sku, u, 10)
		require.NoError(t, err)
		require.Equal(t, map[string]int64{"u1": 1, "u2": 2}[u], e.Position)
		require.Equal(t, i < 2, e.Joined)
	}
	place, err := st.WaitlistPlace(ctx, sku, "u2")
	require.NoError(t, err)
	require.Equal(t, int64(2), place.Position)

	for range 2 { // a retry names the same buyer
		u, err := st.PopWaitlist(ctx, sku, "A")
		require.NoError(t, err)
		require.Equal(t, "u1", u)
	}
	place, err = st.WaitlistPlace(ctx, sku, "u1")
	require.NoError(t, err)
	require.Equal(t, "A", place.OfferedFrom)

	before, err := st.Stock(ctx, sku)
	require.NoError(t, err)
	for range 2 {
		r, err := st.Transfer(ctx, "A", "wl-A", sku, 2)
		require.NoError(t, err)
		require.Equal(t, a, r, "the waiting buyer's order holds what A held")
	}
	after, err := st.Stock(ctx, sku)
	require.NoError(t, err)
	require.Equal(t, before.PerBucket, after.PerBucket, "no bucket stock moved")
	n, err := st.Release(ctx, "A", sku)
	require.NoError(t, err)
	require.Zero(t, n, "A's units went to wl-A")

	// A failed hand-over puts the units on open sale.
	_, err = st.Transfer(ctx, "B", "wl-B", sku, 5)
	require.Equal(t, flashsale.SoldOut, flashsale.ErrorCode(err))
	n, err = st.Release(ctx, "wl-A", sku)
	require.NoError(t, err)
	require.Equal(t, int64(2), n)
	inBuckets, held := requireConserved(ctx, t, st, sku, 3)
	require.Equal(t, int64(3), inBuckets)
	require.Zero(t, held)
}

// TestReconcileHelpersOnCluster: what the reconciler and the resync
// workflow use from inventory: marks, snapshot, held units (SCAN of every
// master), drift, the fence claim, relative corrections, and restoring a
// SKU whose keys were lost.
func TestReconcileHelpersOnCluster(t *testing.T) {
	rdb := newClient(t, useCluster(t, false))
	st := inventory.New(rdb, testOpts)
	ctx := context.Background()
	sku := newSKU(t, rdb)

	require.NoError(t, st.LoadScripts(ctx), "SCRIPT LOAD reaches every node")
	_, err := st.Preheat(ctx, sku, 40, 16)
	require.NoError(t, err)
	require.NoError(t, st.RawTake(ctx, sku, 5, "raw-1"))
	_, err = st.Reserve(ctx, "h1", sku, 3)
	require.NoError(t, err)
	require.NoError(t, st.RecordDrift(ctx, sku, "h1", 2))
	require.NoError(t, st.RecordDrift(ctx, sku, "h1", 2), "counted once per order")
	stk, err := st.Stock(ctx, sku)
	require.NoError(t, err)
	require.Equal(t, int64(2), stk.Drift)

	held, n := heldTotal(ctx, t, st, sku)
	require.Equal(t, map[string]int64{"raw-1": 1, "h1": 3}, held)
	require.Equal(t, int64(4), n)
	snap, err := st.Snapshot(ctx, sku)
	require.NoError(t, err)
	require.False(t, snap.Missing)
	require.Equal(t, int64(36), snap.Units)

	ok, err := st.ClaimCorrection(ctx, sku, snap.Fence, "c1")
	require.NoError(t, err)
	require.True(t, ok)
	ok, err = st.ClaimCorrection(ctx, sku, snap.Fence, "c1")
	require.NoError(t, err)
	require.True(t, ok, "a retry recognises its own claim")
	ok, err = st.ClaimCorrection(ctx, sku, snap.Fence, "c2")
	require.NoError(t, err)
	require.False(t, ok, "the fence moved")

	moved, err := st.Adjust(ctx, sku, 20, "c1")
	require.NoError(t, err)
	require.Equal(t, int64(20), moved)
	moved, err = st.Adjust(ctx, sku, 20, "c1")
	require.NoError(t, err)
	require.Equal(t, int64(20), moved, "a retry replays")
	moved, err = st.Adjust(ctx, sku, -50, "c3")
	require.NoError(t, err)
	require.Equal(t, int64(-50), moved)
	requireConserved(ctx, t, st, sku, 36+20-50+4)

	// Redis loses the SKU: nothing works until Restore puts it back, and
	// Restore never doubles a SKU on sale.
	require.NoError(t, deleteSKUKeys(ctx, rdb, sku))
	m, err := st.Marks(ctx, sku)
	require.NoError(t, err)
	require.True(t, m.Missing)
	_, err = st.Reserve(ctx, "h2", sku, 1)
	require.Equal(t, flashsale.UnknownSKU, flashsale.ErrorCode(err))
	r, err := st.Restore(ctx, sku, 25, 16)
	require.NoError(t, err)
	require.True(t, r.Restored)
	require.Equal(t, int64(25), r.Units)
	r, err = st.Restore(ctx, sku, 25, 16)
	require.NoError(t, err)
	require.False(t, r.Restored)
	require.Equal(t, int64(25), r.Units)
	_, err = st.Reserve(ctx, "h2", sku, 1)
	require.NoError(t, err)
	requireConserved(ctx, t, st, sku, 25)
}

// TestMultiKeyCommandsAcrossSlotsFail shows the failure these tests guard
// against: a command whose keys live in different slots is refused by the
// cluster, where a single Redis would accept it.
func TestMultiKeyCommandsAcrossSlotsFail(t *testing.T) {
	rdb := newClient(t, useCluster(t, false))
	ctx := context.Background()
	sku := newSKU(t, rdb)
	var crossSlot redis.Error
	err := rdb.MGet(ctx, stockKey(sku, 0), stockKey(sku, 1)).Err()
	require.True(t, errors.As(err, &crossSlot), "got %v", err)
	require.ErrorContains(t, err, "CROSSSLOT")
	require.NoError(t, rdb.MGet(ctx, skuKey(sku), fmt.Sprintf("fs:{sku:%s}:gen", sku)).Err(),
		"keys sharing a hash tag are one slot")
}

// TestBuyerLimitOnCluster: the per-buyer count, its claims and the SKU's
// limit share the SKU's slot, so limit_take.lua and the edge's MGET run on
// a cluster; one buyer racing 40 orders over 16 buckets on three masters
// holds exactly the limit, and a release gives one unit of it back.
func TestBuyerLimitOnCluster(t *testing.T) {
	const limit = 5
	rdb := newClient(t, useCluster(t, false))
	st := inventory.New(rdb, testOpts)
	ctx := context.Background()
	sku := newSKU(t, rdb)
	require.NoError(t, st.SetLimit(ctx, sku, limit, 1000))
	_, err := st.Preheat(ctx, sku, 100, 16)
	require.NoError(t, err)

	won := make(chan string, 40)
	errs := make(chan error, 40)
	for _, id := range orderIDs("lim", 40) {
		go func() {
			_, err := st.ReserveFor(ctx, "buyer:1", id, sku, 1)
			switch {
			case err == nil:
				won <- id
			case flashsale.ErrorCode(err) == flashsale.LimitExceeded:
				errs <- nil
			default:
				errs <- err
			}
		}()
	}
	var ids []string
	for range 40 {
		select {
		case id := <-won:
			ids = append(ids, id)
		case err := <-errs:
			require.NoError(t, err)
		}
	}
	require.Len(t, ids, limit)
	av, err := st.AvailableTo(ctx, sku, "buyer:1")
	require.NoError(t, err)
	require.Equal(t, inventory.Allowance{Limit: limit, Held: limit}, av.Allowance)
	require.EqualValues(t, 100-limit, av.Units)

	_, err = st.Release(ctx, ids[0], sku)
	require.NoError(t, err)
	av, err = st.AvailableTo(ctx, sku, "buyer:1")
	require.NoError(t, err)
	require.Equal(t, inventory.Allowance{Limit: limit, Held: limit - 1}, av.Allowance)
}
