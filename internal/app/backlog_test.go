//go:build integration

package app

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/internal/orderdb"
	"github.com/flashsale/flashsale/internal/testenv"
)

// The overdue gauges read MySQL: an unpaid order past pay_by plus the grace
// is counted and named by its id (what FlashsaleOrderOverdue fires on), a
// younger one is not; a held drift counts in flashsale_reconcile_holds_pending.
func TestBacklogGaugesNameOverdueOrders(t *testing.T) {
	ctx := context.Background()
	store, err := orderdb.Open(ctx, testenv.MySQLDSN(t))
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	_, err = store.PutSKU(ctx, flashsale.SKU{ID: "backlog", Total: 5, Price: 100, Buckets: 1, PerUserLimit: 5})
	require.NoError(t, err)
	for id, payBy := range map[string]time.Time{"late": time.Now().Add(-5 * time.Minute), "young": time.Now().Add(-time.Minute)} {
		_, err := store.CreateOrder(ctx, orderdb.NewOrder{PayBy: payBy, Order: flashsale.Order{OrderID: id, UserID: "u",
			Items: []flashsale.Item{{SKU: "backlog", Quantity: 1}}}})
		require.NoError(t, err)
	}
	_, err = store.HoldDrift(ctx, "backlog", 50, 1, "{}")
	require.NoError(t, err)

	reg := prometheus.NewRegistry()
	require.NoError(t, reg.Register(newBacklogCollector(nil, store)))
	families, err := reg.Gather()
	require.NoError(t, err)
	got := map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			name := f.GetName()
			for _, l := range m.GetLabel() {
				name += "{" + l.GetName() + "=" + l.GetValue() + "}"
			}
			got[name] = m.GetGauge().GetValue()
		}
	}
	require.Equal(t, 1.0, got["flashsale_orders_overdue"])
	require.InDelta(t, 180, got["flashsale_order_overdue_seconds{order_id=late}"], 10)
	require.NotContains(t, got, "flashsale_order_overdue_seconds{order_id=young}")
	require.Equal(t, 1.0, got["flashsale_reconcile_holds_pending"])
	require.Equal(t, 0.0, got["flashsale_backlog_read_errors"])
}
