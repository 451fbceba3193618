package devstack

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/internal/orderdb"
)

// The demo's store runs the short hot-row section and bucket rows too (a
// preheat splits every SKU's stock): the per-user limit's row, a split,
// creates from bucket rows and a gather, pay and close back to their rows,
// the audit's per-row journal chain, and a reset that removes the rows.
func TestMySQLBucketRows(t *testing.T) {
	ctx := context.Background()
	m := runMySQL(t)
	s := openStore(t, m.DSN())

	_, err := s.PutSKU(ctx, flashsale.SKU{ID: "hot", Total: 10, Price: 250, Buckets: 4, PerUserLimit: 3})
	require.NoError(t, err)
	_, err = s.SplitStock(ctx, "hot", 4)
	require.NoError(t, err)
	requireInventory(t, s, 10, 0, 0)

	for i := range 4 {
		_, err := s.CreateOrder(ctx, newOrder(fmt.Sprintf("o%d", i), fmt.Sprintf("u%d", i), 2))
		require.NoError(t, err)
	}
	_, err = s.CreateOrder(ctx, newOrder("over", "u0", 2))
	require.Equal(t, flashsale.LimitExceeded, flashsale.ErrorCode(err), "%v", err)
	requireInventory(t, s, 2, 8, 0)
	_, err = s.ConfirmPayment(ctx, "o0", "t0", 500)
	require.NoError(t, err)
	_, err = s.CloseOrder(ctx, "o1", flashsale.StatusExpired, "timeout")
	require.NoError(t, err)
	requireInventory(t, s, 4, 4, 2)
	// 4 units left, spread over rows; one order takes them all.
	_, err = s.CreateOrder(ctx, newOrder("all", "u9", 3))
	require.NoError(t, err)
	_, err = s.CreateOrder(ctx, newOrder("none", "u8", 2))
	require.Equal(t, flashsale.StockDrift, flashsale.ErrorCode(err), "%v", err)
	requireInventory(t, s, 1, 7, 2)

	a, err := s.AuditSKU(ctx, "hot")
	require.NoError(t, err)
	require.Zero(t, a.Journal.Breaks)
	require.Equal(t, []int64{1, 7, 2}, []int64{a.Journal.Available, a.Journal.Frozen, a.Journal.Sold})
	require.Equal(t, []int64{1, 7, 2}, []int64{a.Journal.LastAvailable, a.Journal.LastFrozen, a.Journal.LastSold})
	require.Equal(t, int64(7), a.PendingUnits)

	for _, id := range []string{"o2", "o3", "all"} {
		_, err := s.CloseOrder(ctx, id, flashsale.StatusCancelled, "changed mind")
		require.NoError(t, err)
	}
	inv, err := s.PutSKU(ctx, flashsale.SKU{ID: "hot", Total: 5, Price: 250, Buckets: 4, PerUserLimit: 3})
	require.NoError(t, err)
	require.Equal(t, orderdb.Inventory{SKU: "hot", Total: 5, Available: 5, Price: 250, Buckets: 4, PerUserLimit: 3}, inv)
	requireInventory(t, s, 5, 0, 0)
	a, err = s.AuditSKU(ctx, "hot")
	require.NoError(t, err)
	require.Zero(t, a.Journal.Breaks)
	require.Equal(t, int64(5), a.Journal.LastAvailable)
}
