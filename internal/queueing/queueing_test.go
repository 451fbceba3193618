//go:build integration

package queueing_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/internal/edge"
	"github.com/flashsale/flashsale/internal/inventory"
	"github.com/flashsale/flashsale/internal/orderdb"
	"github.com/flashsale/flashsale/internal/queueing"
	"github.com/flashsale/flashsale/internal/sale"
	"github.com/flashsale/flashsale/internal/testenv"
)

// newService is a queue over a sale of a new SKU with units units left,
// opening in an hour, at buyRate queue requests per second per buyer.
func newService(t *testing.T, units int64, buyRate int) (*queueing.Service, string) {
	t.Helper()
	rdb := testenv.Redis(t)
	sku := "queueing-" + testenv.UniqueID(t)
	seeds, err := orderdb.Open(t.Context(), testenv.MySQLDSN(t))
	require.NoError(t, err)
	t.Cleanup(func() { _ = seeds.Close() })
	st := sale.New(rdb, func(context.Context, string) (int64, error) { return units, nil }).WithSeeds(seeds)
	_, err = st.Prepare(t.Context(), sku, "run-1", time.Now().Add(time.Hour), time.Minute, 0)
	require.NoError(t, err)
	waits := sale.NewWaits(st, sale.DefaultWaitEvery, slog.Default())
	t.Cleanup(waits.Close)
	return &queueing.Service{
		Gate:        edge.New(rdb, inventory.New(rdb, inventory.Options{}), edge.Options{BuyRate: buyRate}),
		Door:        sale.NewDoor(st, sale.NewSigner("test-secret"), nil),
		Waits:       waits,
		LookTimeout: 5 * time.Second,
	}, sku
}

// Enter is once per buyer; Me answers the buyer's place, without a pass
// before the open and with one the sale's check takes once their turn
// came; a buyer not in the queue is NOT_IN_QUEUE.
func TestEnterAndMe(t *testing.T) {
	ctx := t.Context()
	q, sku := newService(t, 10, 1000)
	// Buyers of this run only: the gate's rate keys outlive a test.
	alice, bob := "alice-"+sku, "bob-"+sku
	first, err := q.Enter(ctx, alice, sku)
	require.NoError(t, err)
	require.True(t, first.Entered)
	again, err := q.Enter(ctx, alice, sku)
	require.NoError(t, err)
	require.False(t, again.Entered, "a repeat enters nobody")
	require.Equal(t, first.Ticket, again.Ticket)

	p, err := q.Me(ctx, alice, sku, 0)
	require.NoError(t, err)
	require.Equal(t, first.Ticket, p.Ticket.Ticket)
	require.Empty(t, p.Pass, "no pass before the open")

	_, err = q.Door.Store().Open(ctx, sku, nil)
	require.NoError(t, err)
	p, err = q.Me(ctx, alice, sku, time.Second)
	require.NoError(t, err)
	require.EqualValues(t, 1, p.Rank)
	require.NotEmpty(t, p.Pass, "alone in the queue, her turn came")
	require.Equal(t, p.Place.PassExpiry, p.PassExpiresAt)
	claim, err := q.Door.Check(ctx, alice, []flashsale.Item{{SKU: sku, Quantity: 1}}, p.Pass)
	require.NoError(t, err)
	require.True(t, claim.Live)

	_, err = q.Me(ctx, bob, sku, 0)
	require.Equal(t, flashsale.NotInQueue, flashsale.ErrorCode(err))
}

// Each use case spends one of the buyer's queue requests at the gate: at
// one a second, the second call at once is RATE_LIMITED, and another
// buyer is not.
func TestQueueRequestsAreRateLimited(t *testing.T) {
	ctx := t.Context()
	q, sku := newService(t, 10, 1)
	alice, bob := "alice-"+sku, "bob-"+sku
	_, err := q.Enter(ctx, alice, sku)
	require.NoError(t, err)
	_, err = q.Me(ctx, alice, sku, 0)
	require.Equal(t, flashsale.RateLimited, flashsale.ErrorCode(err))
	_, err = q.Enter(ctx, bob, sku)
	require.NoError(t, err)
}
