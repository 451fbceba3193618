//go:build integration

package edge

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/internal/inventory"
	"github.com/flashsale/flashsale/internal/redisguard"
)

// Every admitted id joins its SKU's placed set before its unit is taken;
// once the SKU is seen sold out, QuickAnswer answers a request without a
// key at once, sends a key whose id is in the snapshot to the full path,
// and stops answering when the stock changes.
func TestQuickAnswer(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	f.preheat(1)
	g := f.gate(Options{LocalTTL: time.Minute})
	buyer := f.id + "-u1"
	key := "cart-1"
	placed := flashsale.BuyerOrderID(buyer, key)

	require.Equal(t, QuickNone, g.QuickAnswer(f.sku, "", buyer), "on sale")
	tk, err := g.Admit(ctx, Request{OrderID: placed, ClientOrderID: true, UserID: buyer,
		Items: []flashsale.Item{{SKU: f.sku, Quantity: 1}}})
	require.NoError(t, err)
	in, err := f.rdb.SIsMember(ctx, placedSetKey(f.sku), placed).Result()
	require.NoError(t, err)
	require.True(t, in, "the id joined the SKU's placed set on admission")
	ttl, err := f.rdb.TTL(ctx, placedSetKey(f.sku)).Result()
	require.NoError(t, err)
	require.Greater(t, ttl, time.Hour)
	_, err = f.stock.ReserveFor(ctx, buyer, placed, f.sku, 1)
	require.NoError(t, err)
	tk.Done(ctx, false)

	// The next buyer reads no unit left: cached, with the snapshot.
	_, err = g.Admit(ctx, f.req(2, 1))
	require.Equal(t, flashsale.SoldOut, flashsale.ErrorCode(err))
	require.Equal(t, QuickSoldOut, g.QuickAnswer(f.sku, "", ""))
	require.Equal(t, QuickSoldOut, g.QuickAnswer(f.sku, key, f.id+"-u2"), "another buyer's equal key is theirs")
	require.Equal(t, QuickSoldOut, g.QuickAnswer(f.sku, "other-key", buyer))
	require.Equal(t, QuickMaybeRepeat, g.QuickAnswer(f.sku, key, buyer), "a repeat gets its first answer")
	require.Equal(t, QuickSoldOut, g.QuickAnswer(f.sku, placed, ""), "an order id is no key: ids are the buyer's digest of one")
	require.Equal(t, QuickNone, g.QuickAnswer(f.sku+"-x", "", ""))
	require.Zero(t, testing.AllocsPerRun(100, func() { g.QuickAnswer(f.sku, key, f.id+"-u2") }))

	// While Redis is down there is no quick answer: the degraded path
	// decides.
	guard := redisguard.New(redisguard.Options{Failures: 1, Cooldown: time.Hour})
	done, ok := guard.Allow()
	require.True(t, ok)
	done(context.DeadlineExceeded)
	require.False(t, guard.Up())
	up := g.opts.Guard
	g.opts.Guard = guard
	require.Equal(t, QuickNone, g.QuickAnswer(f.sku, "", ""))
	g.opts.Guard = up

	// A unit comes back: every instance hears it and stops answering.
	require.NoError(t, f.rdb.Publish(ctx, inventory.StockChangedChannel, f.sku).Err())
	require.Eventually(t, func() bool { return g.QuickAnswer(f.sku, "", "") == QuickNone }, time.Second, time.Millisecond)
	g.cache.mu.RLock()
	_, kept := g.cache.placed[f.sku]
	g.cache.mu.RUnlock()
	require.False(t, kept, "the snapshot went with the entry")
}
