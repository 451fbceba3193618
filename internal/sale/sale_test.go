//go:build integration

package sale_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/internal/sale"
	"github.com/flashsale/flashsale/internal/testenv"
)

// newSale is a sale of a fresh SKU whose buckets hold *units.
func newSale(t *testing.T, units *atomic.Int64, ttl time.Duration) (*sale.Store, string) {
	t.Helper()
	rdb := testenv.Redis(t)
	sku := "sale-" + testenv.UniqueID(t)
	t.Cleanup(func() {
		ctx := context.Background()
		iter := rdb.Scan(ctx, 0, "fs:{sku:"+sku+"}*", 100).Iterator()
		for iter.Next(ctx) {
			_ = rdb.Unlink(ctx, iter.Val()).Err()
		}
	})
	st := sale.New(rdb, func(context.Context, string) (int64, error) { return units.Load(), nil }).WithSeeds(&memSeeds{})
	_, err := st.Prepare(t.Context(), sku, "run-1", time.Now().Add(time.Hour), ttl, 0)
	require.NoError(t, err)
	return st, sku
}

// memSeeds keeps a test's seeds in memory; the worker keeps them in MySQL
// (TestSeedIsNotInRedisBeforeTheOpen).
type memSeeds struct{ m sync.Map }

func (s *memSeeds) KeepSaleSeed(_ context.Context, saleID, _, seed string) (string, error) {
	v, _ := s.m.LoadOrStore(saleID, seed)
	return v.(string), nil
}

func (s *memSeeds) SaleSeed(_ context.Context, saleID string) (string, error) {
	v, _ := s.m.Load(saleID)
	seed, _ := v.(string)
	return seed, nil
}

// Entering is once per buyer, under concurrency: 50 goroutines, 10 buyers,
// exactly 10 tickets 1..10.
func TestEnterOncePerBuyer(t *testing.T) {
	var units atomic.Int64
	st, sku := newSale(t, &units, time.Minute)
	ctx := t.Context()
	var entered atomic.Int64
	tickets := sync.Map{}
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Go(func() {
			user := fmt.Sprintf("u%d", i%10)
			tk, err := st.Enter(ctx, sku, user)
			if err != nil {
				t.Error(err) // not require: this is not the test's goroutine
				return
			}
			if tk.Entered {
				entered.Add(1)
			}
			if prev, loaded := tickets.LoadOrStore(user, tk.Ticket); loaded && prev != tk.Ticket {
				t.Errorf("%s got tickets %d and %d", user, prev, tk.Ticket)
			}
		})
	}
	wg.Wait()
	require.Equal(t, int64(10), entered.Load())
	seen := map[int64]bool{}
	tickets.Range(func(_, v any) bool { seen[v.(int64)] = true; return true })
	require.Len(t, seen, 10)
	for i := int64(1); i <= 10; i++ {
		require.True(t, seen[i], "ticket %d", i)
	}
	_, err := st.PlaceOf(ctx, sku, "nobody")
	require.Equal(t, flashsale.NotInQueue, flashsale.ErrorCode(err))
}

// The revealed seed reproduces every rank; the commitment published before
// anyone entered is the seed's hash; later arrivals are ranked after the
// entrants in arrival order; a retried open changes no rank.
func TestOpenRanksFromTheCommittedSeed(t *testing.T) {
	var units atomic.Int64
	st, sku := newSale(t, &units, time.Minute)
	ctx := t.Context()
	first, err := st.Enter(ctx, sku, "u0")
	require.NoError(t, err)
	require.Equal(t, sale.Prequeue, first.State)
	commit, err := st.PlaceOf(ctx, sku, "u0")
	require.NoError(t, err)
	require.Empty(t, commit.Seed, "the seed is secret before the open")
	var users []string
	for i := range 200 {
		users = append(users, fmt.Sprintf("u%d", i))
		_, err := st.Enter(ctx, sku, users[i])
		require.NoError(t, err)
	}
	_, err = st.SetState(ctx, sku, sale.Paused, sale.Open)
	require.Equal(t, flashsale.SaleStateConflict, flashsale.ErrorCode(err), "pause before the open")

	opened, err := st.Open(ctx, sku, nil)
	require.NoError(t, err)
	require.Equal(t, int64(200), opened.Entrants)
	require.Equal(t, sale.Open, opened.State)
	require.Equal(t, commit.SeedHash, sale.SeedHash(opened.Seed))

	want := sale.Ranks(opened.Seed, users)
	for rank, u := range want {
		p, err := st.PlaceOf(ctx, sku, u)
		require.NoError(t, err)
		require.Equal(t, int64(rank+1), p.Rank, u)
		require.Equal(t, opened.Seed, p.Seed)
	}
	// Not the order of entry (a 1 in 200! chance to fail).
	require.NotEqual(t, users, want)

	late := []string{"late-a", "late-b", "u7"}
	for i, u := range late[:2] {
		tk, err := st.Enter(ctx, sku, u)
		require.NoError(t, err)
		require.Equal(t, int64(201+i), tk.Rank)
	}
	tk, err := st.Enter(ctx, sku, "u7")
	require.NoError(t, err)
	require.False(t, tk.Entered, "an entrant entering again keeps the place")

	again, err := st.Open(ctx, sku, nil)
	require.NoError(t, err)
	require.Equal(t, opened.Seed, again.Seed)
	p, err := st.PlaceOf(ctx, sku, want[0])
	require.NoError(t, err)
	require.Equal(t, int64(1), p.Rank)
}

// Passes go out in rank order while units left exceed passes outstanding;
// a spent pass is spent once; an expired one returns its unit to the
// counter.
func TestPassesFollowTheStock(t *testing.T) {
	var units atomic.Int64
	units.Store(2)
	st, sku := newSale(t, &units, 1500*time.Millisecond)
	ctx := t.Context()
	for i := range 4 {
		_, err := st.Enter(ctx, sku, fmt.Sprintf("u%d", i))
		require.NoError(t, err)
	}
	opened, err := st.Open(ctx, sku, nil)
	require.NoError(t, err)
	order := sale.Ranks(opened.Seed, []string{"u0", "u1", "u2", "u3"})

	place := func(u string) sale.Place {
		p, err := st.PlaceOf(ctx, sku, u)
		require.NoError(t, err)
		return p
	}
	p3 := place(order[3])
	require.Equal(t, int64(2), p3.Serving, "two units, two passes")
	require.Equal(t, int64(2), p3.Outstanding)
	require.Equal(t, int64(1), p3.Ahead)
	require.True(t, p3.PassExpiry.IsZero())
	p0 := place(order[0])
	require.False(t, p0.PassExpiry.IsZero())

	// The first buyer spends: the unit leaves the buckets with the pass.
	require.NoError(t, st.Spend(ctx, sku, 1, p0.PassExpiry, "o1"))
	require.NoError(t, st.Spend(ctx, sku, 1, p0.PassExpiry, "o1"), "a retried buy")
	require.Equal(t, flashsale.PassUsed, flashsale.ErrorCode(st.Spend(ctx, sku, 1, p0.PassExpiry, "o2")))
	require.Equal(t, int64(2), place(order[3]).Serving, "spent, its order still placing: its unit is nobody else's")
	require.True(t, place(order[0]).Spent)
	require.True(t, place(order[0]).PassExpiry.IsZero(), "a spent pass is not shown again")
	board, err := st.BoardOf(ctx, sku)
	require.NoError(t, err)
	require.Equal(t, int64(1), board.Outstanding, "the board counts the pass still out, not the one spent")
	require.Equal(t, int64(1), board.Spent)
	units.Add(-1)
	require.NoError(t, st.Settle(ctx, sku, 1, p0.PassExpiry, "o1", true))
	require.NoError(t, st.Settle(ctx, sku, 1, p0.PassExpiry, "o1", true), "a repeat changes nothing")
	require.Equal(t, int64(2), place(order[3]).Serving, "one unit, one pass outstanding")
	require.True(t, place(order[0]).Spent)

	// The second never spends: after its expiry the unit goes to rank 3.
	p1 := place(order[1])
	require.False(t, p1.PassExpiry.IsZero())
	require.Eventually(t, func() bool { return place(order[2]).Serving == 3 }, 5*time.Second, 50*time.Millisecond)
	require.Equal(t, flashsale.PassExpired, flashsale.ErrorCode(st.Spend(ctx, sku, 2, p1.PassExpiry, "o3")))
	require.False(t, place(order[3]).SoldOut, "a unit is left")
	require.True(t, place(order[1]).PassExpiry.IsZero())

	// Paused: nothing issued, nothing spent.
	_, err = st.SetState(ctx, sku, sale.Paused, sale.Open)
	require.NoError(t, err)
	p2 := place(order[2])
	require.Equal(t, flashsale.SalePaused, flashsale.ErrorCode(st.Spend(ctx, sku, 3, p2.PassExpiry, "o4")))
	_, err = st.SetState(ctx, sku, sale.Open, sale.Paused)
	require.NoError(t, err)
	require.NoError(t, st.Spend(ctx, sku, 3, p2.PassExpiry, "o4"))

	// The last unit is taken: everyone still queued hears it at once.
	units.Add(-1)
	require.NoError(t, st.Settle(ctx, sku, 3, p2.PassExpiry, "o4", true))
	p3 = place(order[3])
	require.True(t, p3.SoldOut)
	require.True(t, p3.PassExpiry.IsZero())
	require.True(t, place(order[2]).Spent, "the buyer of the last unit")
}

// An open cut short (a worker killed between the freeze and the reveal,
// half the ranks written) and retried loses no entrant and changes no
// rank; a buyer who came in between keeps the rank after the entrants.
func TestOpenRetriedAfterACrashChangesNoRank(t *testing.T) {
	var units atomic.Int64
	st, sku := newSale(t, &units, time.Minute)
	ctx := t.Context()
	rdb := testenv.Redis(t)
	var users []string
	for i := range 100 {
		users = append(users, fmt.Sprintf("u%03d", i))
		_, err := st.Enter(ctx, sku, users[i])
		require.NoError(t, err)
	}
	opened, err := st.Open(ctx, sku, nil)
	require.NoError(t, err)
	want := sale.Ranks(opened.Seed, users)

	// Back to where the crashed open left it: frozen, seed not revealed,
	// half the ranks written (and its progress saying so).
	key := "fs:{sku:" + sku + "}:sale"
	require.NoError(t, rdb.HSet(ctx, key, "state", "SHUFFLING", "ranked", 50).Err())
	require.NoError(t, rdb.HDel(ctx, key, "seed").Err())
	require.NoError(t, rdb.ZRem(ctx, key+":rank", want[50:]).Err())
	require.Equal(t, int64(50), rdb.ZCard(ctx, key+":rank").Val())
	tk, err := st.Enter(ctx, sku, "between")
	require.NoError(t, err)
	require.Equal(t, int64(101), tk.Rank)
	_, err = st.PlaceOf(ctx, sku, "between")
	require.NoError(t, err)
	require.Equal(t, flashsale.SaleNotOpen, flashsale.ErrorCode(st.Spend(ctx, sku, 1, time.Now().Add(time.Minute), "o")))

	again, err := st.Open(ctx, sku, nil)
	require.NoError(t, err)
	require.Equal(t, sale.Open, again.State)
	require.Equal(t, opened.Seed, again.Seed)
	require.Equal(t, int64(100), again.Entrants)
	for rank, u := range want {
		p, err := st.PlaceOf(ctx, sku, u)
		require.NoError(t, err)
		require.Equal(t, int64(rank+1), p.Rank, u)
	}
	p, err := st.PlaceOf(ctx, sku, "between")
	require.NoError(t, err)
	require.Equal(t, int64(101), p.Rank)
	require.Equal(t, int64(101), p.Queued)
}

// A pass spent on an order that got no unit is given back (Settle, not
// bought): its holder is no longer shown pass_spent. While a unit is left
// for it the pass is outstanding again and buys it; with none left it is
// released and its holder told the sell-out, so the passes outstanding
// never exceed the units left. Only the order it was spent on gives it
// back, once; a pass past its expiry stays gone.
func TestGiveBackAPassThatBoughtNothing(t *testing.T) {
	var units atomic.Int64
	units.Store(1)
	base, sku := newSale(t, &units, time.Minute)
	order := openSale(t, base, sku, 2)
	ctx := t.Context()
	p, err := base.PlaceOf(ctx, sku, order[0])
	require.NoError(t, err)
	require.False(t, p.PassExpiry.IsZero())

	require.NoError(t, base.Spend(ctx, sku, p.Rank, p.PassExpiry, "lost"))
	units.Store(0) // a buy in flight took the unit: "lost" is refused SOLD_OUT
	spent, err := base.PlaceOf(ctx, sku, order[0])
	require.NoError(t, err)
	require.True(t, spent.Spent)
	require.False(t, spent.SoldOut, "spent: the buyer is not told the sell-out")

	require.NoError(t, base.Settle(ctx, sku, p.Rank, p.PassExpiry, "another-order", false))
	still, err := base.PlaceOf(ctx, sku, order[0])
	require.NoError(t, err)
	require.True(t, still.Spent, "only the order the pass was spent on gives it back")

	// A unit came back before the pass did: it is outstanding again, for
	// that unit, and buys it.
	units.Store(1)
	require.NoError(t, base.Settle(ctx, sku, p.Rank, p.PassExpiry, "lost", false))
	back, err := base.PlaceOf(ctx, sku, order[0])
	require.NoError(t, err)
	require.False(t, back.Spent)
	require.Equal(t, p.PassExpiry, back.PassExpiry, "the same pass, outstanding again")
	require.Equal(t, int64(1), back.Outstanding, "and no other pass for the one unit")
	require.NoError(t, base.Settle(ctx, sku, p.Rank, p.PassExpiry, "lost", false), "a repeat changes nothing")
	board, err := base.BoardOf(ctx, sku)
	require.NoError(t, err)
	require.Equal(t, int64(1), board.Outstanding)
	require.Zero(t, board.Spent)
	require.NoError(t, base.Spend(ctx, sku, p.Rank, p.PassExpiry, "won"))

	// Nothing left for it: the pass is released, not outstanding (the
	// passes outstanding never exceed the units left), and its holder is
	// told the sell-out.
	units.Store(0) // "won" was refused too
	require.NoError(t, base.Settle(ctx, sku, p.Rank, p.PassExpiry, "won", false))
	gone, err := base.PlaceOf(ctx, sku, order[0])
	require.NoError(t, err)
	require.False(t, gone.Spent)
	require.True(t, gone.SoldOut, "told the sell-out once the pass is back")
	require.True(t, gone.PassExpiry.IsZero(), "released")
	require.Zero(t, gone.Outstanding)

	// A pass given back after its expiry is not outstanding again.
	units.Store(1)
	short, sku2 := newSale(t, &units, 200*time.Millisecond)
	order2 := openSale(t, short, sku2, 1)
	q, err := short.PlaceOf(ctx, sku2, order2[0])
	require.NoError(t, err)
	require.NoError(t, short.Spend(ctx, sku2, q.Rank, q.PassExpiry, "late"))
	time.Sleep(time.Until(q.PassExpiry) + 50*time.Millisecond)
	require.NoError(t, short.Settle(ctx, sku2, q.Rank, q.PassExpiry, "late", false))
	b2, err := short.BoardOf(ctx, sku2)
	require.NoError(t, err)
	require.Zero(t, b2.Outstanding)
	require.Zero(t, b2.Spent)
}
