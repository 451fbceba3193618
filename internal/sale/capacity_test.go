//go:build integration

package sale_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/internal/sale"
	"github.com/flashsale/flashsale/internal/testenv"
)

var testRedis = testenv.Redis

// openSale enters n buyers u000.. in a new sale of st's and opens it; it
// returns the buyers in rank order.
func openSale(t *testing.T, st *sale.Store, sku string, n int) []string {
	t.Helper()
	var users []string
	for i := range n {
		users = append(users, fmt.Sprintf("u%03d", i))
		_, err := st.Enter(t.Context(), sku, users[i])
		require.NoError(t, err)
	}
	opened, err := st.Open(t.Context(), sku, nil)
	require.NoError(t, err)
	return sale.Ranks(opened.Seed, users)
}

// The serving counter never has more passes outstanding than the capacity
// the live instances published, under concurrency: two instances publish 3
// and 2 units, 40 buyers look at once through both, 200 looks in all;
// every answer shows at most 5 outstanding, exactly ranks 1..5 hold a pass.
// Then 3 passes are spent concurrently and everyone looks again: exactly 3
// more passes, to ranks 6..8. The units bound it too: with 2 left, no new
// pass while 2 or more are outstanding.
func TestPassesNeverExceedThePublishedCapacity(t *testing.T) {
	var units atomic.Int64
	units.Store(100)
	base, sku := newSale(t, &units, time.Minute)
	a, b := base.WithCapacity(3, time.Minute), sale.New(testRedis(t), func(context.Context, string) (int64, error) {
		return units.Load(), nil
	}).WithCapacity(2, time.Minute)
	ctx := t.Context()
	// Both instances are live before the open (a look before the open
	// publishes too).
	order := openSale(t, a, sku, 40)
	_, err := a.PlaceOf(ctx, sku, order[39])
	require.NoError(t, err)
	p, err := b.PlaceOf(ctx, sku, order[39])
	require.NoError(t, err)
	require.Equal(t, int64(5), p.Capacity, "3 + 2 published")
	require.Equal(t, int64(5), p.Serving)

	look := func(rounds int) (holders map[string]sale.Place) {
		var mu sync.Mutex
		holders = map[string]sale.Place{}
		var over atomic.Int64
		var wg sync.WaitGroup
		for i, u := range order {
			st := []*sale.Store{a, b}[i%2]
			wg.Go(func() {
				for range rounds {
					p, err := st.PlaceOf(ctx, sku, u)
					if !assert.NoError(t, err) {
						return
					}
					if p.Outstanding > 5 || p.Outstanding > units.Load() {
						over.Add(1)
						t.Errorf("%d outstanding, capacity 5, %d units", p.Outstanding, units.Load())
					}
					if !p.PassExpiry.IsZero() {
						mu.Lock()
						holders[u] = p
						mu.Unlock()
					}
				}
			})
		}
		wg.Wait()
		require.Zero(t, over.Load())
		return holders
	}
	holders := look(5)
	require.Len(t, holders, 5)
	for _, u := range order[:5] {
		require.Contains(t, holders, u)
	}
	board, err := a.BoardOf(ctx, sku)
	require.NoError(t, err)
	require.Equal(t, int64(5), board.Outstanding)
	require.Equal(t, int64(5), board.Serving)
	require.Equal(t, int64(5), board.Capacity)

	// Three buys spend their passes at once; the units leave the buckets.
	var wg sync.WaitGroup
	for i, u := range order[:3] {
		wg.Go(func() {
			assert.NoError(t, a.Spend(ctx, sku, holders[u].Rank, holders[u].PassExpiry, fmt.Sprintf("o%d", i)))
		})
	}
	wg.Wait()
	units.Add(-3)
	for i, u := range order[:3] {
		require.NoError(t, a.Settle(ctx, sku, holders[u].Rank, holders[u].PassExpiry, fmt.Sprintf("o%d", i), true))
	}
	holders = look(3)
	require.Len(t, holders, 5, "ranks 4 and 5 still hold theirs, 6..8 got one")
	for _, u := range order[3:8] {
		require.Contains(t, holders, u)
	}
	board, err = a.BoardOf(ctx, sku)
	require.NoError(t, err)
	require.Equal(t, int64(8), board.Serving)
	require.Equal(t, int64(5), board.Outstanding)
	require.Equal(t, int64(3), board.Spent)

	// Two units left, five passes outstanding: spending three leaves two
	// outstanding, which the units already cover; no pass goes out.
	for _, u := range order[3:6] {
		require.NoError(t, b.Spend(ctx, sku, holders[u].Rank, holders[u].PassExpiry, "x"+u))
	}
	units.Store(2)
	for _, u := range order[3:6] {
		require.NoError(t, b.Settle(ctx, sku, holders[u].Rank, holders[u].PassExpiry, "x"+u, true))
	}
	look(2)
	board, err = a.BoardOf(ctx, sku)
	require.NoError(t, err)
	require.Equal(t, int64(8), board.Serving)
	require.Equal(t, int64(2), board.Outstanding)
}

// A dead instance's capacity drops out: once its publication's lifetime
// passes without a look through it, the counter reads only the live ones,
// and issues no pass until the passes outstanding are below that.
func TestDeadInstanceCapacityDropsOut(t *testing.T) {
	var units atomic.Int64
	units.Store(100)
	base, sku := newSale(t, &units, time.Minute)
	live := base.WithCapacity(2, time.Minute)
	dying := sale.New(testRedis(t), func(context.Context, string) (int64, error) { return units.Load(), nil }).
		WithCapacity(3, 300*time.Millisecond)
	ctx := t.Context()
	order := openSale(t, live, sku, 20)
	p, err := live.PlaceOf(ctx, sku, order[0])
	require.NoError(t, err)
	require.Equal(t, int64(2), p.Capacity)
	require.Equal(t, int64(2), p.Serving)
	p, err = dying.PlaceOf(ctx, sku, order[0])
	require.NoError(t, err)
	require.Equal(t, int64(5), p.Capacity)
	require.Equal(t, int64(5), p.Outstanding)

	time.Sleep(400 * time.Millisecond) // the dying instance looks no more
	board, err := live.BoardOf(ctx, sku)
	require.NoError(t, err)
	require.Equal(t, int64(2), board.Capacity, "the dying instance's publication is over")
	p, err = live.PlaceOf(ctx, sku, order[1])
	require.NoError(t, err)
	require.Equal(t, int64(2), p.Capacity, "only the live instance")
	require.Equal(t, int64(5), p.Serving, "five outstanding, capacity 2: nothing new")

	// Four of the five are spent: one outstanding, one more pass (the
	// capacity is 2).
	var passes []sale.Place
	for rank := int64(1); rank <= 4; rank++ {
		p, err := live.PlaceOf(ctx, sku, order[rank-1])
		require.NoError(t, err)
		require.NoError(t, live.Spend(ctx, sku, rank, p.PassExpiry, fmt.Sprintf("o%d", rank)))
		passes = append(passes, p)
	}
	units.Add(-4)
	for _, p := range passes {
		require.NoError(t, live.Settle(ctx, sku, p.Rank, p.PassExpiry, fmt.Sprintf("o%d", p.Rank), true))
	}
	p, err = live.PlaceOf(ctx, sku, order[5])
	require.NoError(t, err)
	require.Equal(t, int64(6), p.Serving)
	require.Equal(t, int64(2), p.Outstanding)
	require.False(t, p.PassExpiry.IsZero(), "rank 6 holds the pass")
}

// A claim is Live while its pass is outstanding: signed, issued with that
// expiry, not spent. The edge lets only a live claim past its cap.
func TestClaimIsLiveWhileThePassIsOutstanding(t *testing.T) {
	var units atomic.Int64
	units.Store(10)
	st, sku := newSale(t, &units, time.Minute)
	ctx := t.Context()
	order := openSale(t, st, sku, 3)
	door := sale.NewDoor(st, sale.NewSigner("test-secret"), nil)
	p, err := st.PlaceOf(ctx, sku, order[0])
	require.NoError(t, err)
	token := door.Issue(p)
	require.NotEmpty(t, token)
	items := []flashsale.Item{{SKU: sku, Quantity: 1}}

	claim, err := door.Check(ctx, order[0], items, token)
	require.NoError(t, err)
	require.True(t, claim.Live)
	require.NoError(t, claim.Spend(ctx, "o1"))
	claim, err = door.Check(ctx, order[0], items, token)
	require.NoError(t, err, "the signature still holds; the spend refuses it")
	require.False(t, claim.Live, "spent")
	require.Equal(t, flashsale.PassUsed, flashsale.ErrorCode(claim.Spend(ctx, "o2")))
	_, err = door.Check(ctx, order[1], items, token)
	require.Equal(t, flashsale.PassForeign, flashsale.ErrorCode(err))
}

// A pass names its sale (issue 35, 9): a pass of the SKU's previous sale,
// for a rank with an outstanding pass now and an expiry before that one's
// (which a resume's shift would accept), is PassForeign and buys nothing;
// the same rank's pass of this sale buys.
func TestPassOfAnotherSaleIsForeign(t *testing.T) {
	var units atomic.Int64
	units.Store(10)
	st, sku := newSale(t, &units, time.Minute)
	ctx := t.Context()
	order := openSale(t, st, sku, 3)
	signer := sale.NewSigner("test-secret")
	door := sale.NewDoor(st, signer, nil)
	p, err := st.PlaceOf(ctx, sku, order[0])
	require.NoError(t, err)
	require.Equal(t, "run-1", p.SaleID)
	items := []flashsale.Item{{SKU: sku, Quantity: 1}}

	old := signer.Sign(sale.Pass{SaleID: "run-0", SKU: sku, UserID: order[0], Rank: p.Rank, Expiry: p.PassExpiry.Add(-time.Second)})
	claim, err := door.Check(ctx, order[0], items, old)
	require.NoError(t, err, "signed by the API: only Redis knows the sale")
	require.Equal(t, flashsale.PassForeign, flashsale.ErrorCode(claim.Spend(ctx, "o-old")))
	claim, err = door.Check(ctx, order[0], items, door.Issue(p))
	require.NoError(t, err)
	require.NoError(t, claim.Spend(ctx, "o1"), "the pass of this sale buys")
}
