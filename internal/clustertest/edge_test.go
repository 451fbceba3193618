//go:build integration

package clustertest

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/internal/edge"
	"github.com/flashsale/flashsale/internal/inventory"
)

// TestEdgeOnCluster: two API instances' gates, each on its own cluster
// client, share the per-user rate limit (redis_rate), the placed-order
// markers and the sold-out flag through the cluster, and one hears the
// stock change another instance's release made (Pub/Sub), dropping its
// in-process sold-out answer.
func TestEdgeOnCluster(t *testing.T) {
	addr := useCluster(t, false)
	rdbA, rdbB := newClient(t, addr), newClient(t, addr)
	stA, stB := inventory.New(rdbA, testOpts), inventory.New(rdbB, testOpts)
	logger := slog.New(slog.DiscardHandler)
	gateA := edge.New(rdbA, stA, edge.Options{BuyRate: 3, PlacedTTL: time.Minute, Logger: logger})
	gateB := edge.New(rdbB, stB, edge.Options{BuyRate: 3, PlacedTTL: time.Minute, Logger: logger})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	for _, g := range []*edge.Gate{gateA, gateB} {
		go func() { _ = g.Run(ctx) }()
	}
	require.Eventually(t, func() bool { return gateA.Stats().Subscribed && gateB.Stats().Subscribed },
		5*time.Second, 20*time.Millisecond, "both gates subscribe to stock changes")
	sku := newSKU(t, rdbA)
	// Users and order ids unique per run: the limit and the placed-order
	// markers live in Redis for longer than a test.
	user := func(name string) string { return sku + "-" + name }
	order := user

	// The rate limit is per user across instances: 3 per second in all.
	require.NoError(t, gateA.RateLimit(ctx, "buy", user("rl")))
	require.NoError(t, gateA.RateLimit(ctx, "buy", user("rl")))
	require.NoError(t, gateB.RateLimit(ctx, "buy", user("rl")))
	require.ErrorIs(t, gateB.RateLimit(ctx, "buy", user("rl")), &flashsale.Error{Code: flashsale.RateLimited})
	require.ErrorIs(t, gateA.RateLimit(ctx, "buy", user("rl")), &flashsale.Error{Code: flashsale.RateLimited})
	require.NoError(t, gateA.RateLimit(ctx, "buy", user("other")))

	_, err := stA.Preheat(ctx, sku, 2, 4)
	require.NoError(t, err)
	place := func(g *edge.Gate, st *inventory.Store, id, who string) error {
		t.Helper()
		tk, err := g.Admit(ctx, edge.Request{OrderID: order(id), UserID: user(who), Items: []flashsale.Item{{SKU: sku, Quantity: 1}}})
		if err != nil {
			return err
		}
		// What the order workflow does once admitted.
		_, rerr := st.Reserve(ctx, order(id), sku, 1)
		tk.Done(ctx, rerr != nil)
		return rerr
	}
	require.NoError(t, place(gateA, stA, "e1", "u1"))
	require.NoError(t, place(gateB, stB, "e2", "u2"))

	require.Equal(t, flashsale.SoldOut, flashsale.ErrorCode(place(gateA, stA, "e3", "u3")))
	require.Equal(t, flashsale.SoldOut, flashsale.ErrorCode(place(gateB, stB, "e4", "u4")))
	require.Positive(t, gateB.Stats().SoldOutRedis+gateB.Stats().SoldOutStock)
	require.Equal(t, flashsale.SoldOut, flashsale.ErrorCode(place(gateA, stA, "e5", "u5")))
	require.Positive(t, gateA.Stats().SoldOutLocal, "instance A answers from its own cache")

	// Instance B's release reaches A through the cluster's Pub/Sub.
	heardBefore := gateA.Stats().StockChanges
	n, err := stB.Release(ctx, order("e1"), sku)
	require.NoError(t, err)
	require.Equal(t, int64(1), n)
	require.Eventually(t, func() bool { return gateA.Stats().StockChanges > heardBefore },
		5*time.Second, 20*time.Millisecond, "gate A hears the release made on B's client")
	require.NoError(t, place(gateA, stA, "e6", "u6"), "the released unit is sold at once")

	// A client-chosen order id, repeated, goes through as a duplicate of
	// the placed order; another user cannot take it over.
	tk, err := gateB.Admit(ctx, edge.Request{OrderID: order("e6"), ClientOrderID: true, UserID: user("u6"),
		Items: []flashsale.Item{{SKU: sku, Quantity: 1}}})
	require.NoError(t, err)
	require.True(t, tk.Duplicate)
	tk.Done(ctx, false)
	_, err = gateB.Admit(ctx, edge.Request{OrderID: order("e6"), ClientOrderID: true, UserID: user("u7"),
		Items: []flashsale.Item{{SKU: sku, Quantity: 1}}})
	require.Equal(t, flashsale.OrderIDConflict, flashsale.ErrorCode(err))

	for _, g := range []*edge.Gate{gateA, gateB} {
		require.Zero(t, g.Stats().Unavailable, "no call failed on the cluster")
	}
}
