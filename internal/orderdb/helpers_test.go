//go:build integration

package orderdb_test

import (
	"context"
	"testing"
	"time"

	"github.com/flashsale/flashsale"

	"github.com/stretchr/testify/require"

	"github.com/flashsale/flashsale/internal/orderdb"
	"github.com/flashsale/flashsale/internal/testenv"
)

func newStore(t *testing.T) *orderdb.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := orderdb.Open(ctx, testenv.MySQLDSN(t))
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// testUserLimit is the per-user limit of SKUs made by putSKU: high enough
// that tests about stock, payments and locking never meet it. The limit has
// its own tests (limit_test.go).
const testUserLimit = 1000

func putSKU(t *testing.T, s *orderdb.Store, id string, total, price int64) orderdb.Inventory {
	t.Helper()
	inv, err := s.PutSKU(context.Background(), flashsale.SKU{ID: id, Total: total, Price: price, Buckets: 4, PerUserLimit: testUserLimit})
	require.NoError(t, err)
	return inv
}

func inventory(t *testing.T, s *orderdb.Store, sku string) orderdb.Inventory {
	t.Helper()
	inv, err := s.Inventory(context.Background(), sku)
	require.NoError(t, err)
	return inv
}

func newOrder(id, user string, items ...flashsale.Item) orderdb.NewOrder {
	return orderdb.NewOrder{Order: flashsale.Order{OrderID: id, UserID: user, Items: items}, PayBy: time.Now().Add(15 * time.Minute)}
}

func item(sku string, qty int64) flashsale.Item { return flashsale.Item{SKU: sku, Quantity: qty} }

func createOrder(t *testing.T, s *orderdb.Store, id string, items ...flashsale.Item) orderdb.Order {
	t.Helper()
	o, err := s.CreateOrder(context.Background(), newOrder(id, "user-"+id, items...))
	require.NoError(t, err)
	return o
}

func count(t *testing.T, s *orderdb.Store, query string, args ...any) int64 {
	t.Helper()
	var n int64
	require.NoError(t, s.DB().Raw(query, args...).Scan(&n).Error)
	return n
}

// checkInvariants verifies, for SKUs not reset since their orders were
// placed, that the inventory rows, the orders and the journal all agree:
//
//   - available + frozen + sold = total
//   - frozen = units of PENDING_PAYMENT orders, sold = units of PAID orders
//   - summing the journal deltas replays the row
//   - every order's journal matches its status (RESERVE; +SELL if paid;
//     +RELEASE if closed, or +SELL +REFUND if refunded; never both SELL
//     and RELEASE)
//   - a PAID order has exactly one CAPTURED payment, others none
func checkInvariants(t *testing.T, s *orderdb.Store, skus ...string) {
	t.Helper()
	db := s.DB()
	for _, sku := range skus {
		inv := inventory(t, s, sku)
		require.Equal(t, inv.Total, inv.Available+inv.Frozen+inv.Sold, "sku %s balance", sku)

		units := func(status flashsale.Status) int64 {
			return count(t, s, `SELECT COALESCE(SUM(i.quantity), 0) FROM order_items i
				JOIN orders o ON o.order_id = i.order_id WHERE i.sku_id = ? AND o.status = ?`, sku, status)
		}
		require.Equal(t, units(flashsale.StatusPendingPayment), inv.Frozen, "sku %s frozen = pending units", sku)
		require.Equal(t, units(flashsale.StatusPaid), inv.Sold, "sku %s sold = paid units", sku)

		var replay struct{ Avail, Frozen, Sold, Rows int64 }
		require.NoError(t, db.Raw(`SELECT COALESCE(SUM(delta_available), 0) AS avail, COALESCE(SUM(delta_frozen), 0) AS frozen,
			COALESCE(SUM(delta_sold), 0) AS sold, COUNT(*) AS `+"`rows`"+` FROM inventory_journal WHERE sku_id = ?`, sku).Scan(&replay).Error)
		require.Equal(t, []int64{inv.Available, inv.Frozen, inv.Sold}, []int64{replay.Avail, replay.Frozen, replay.Sold},
			"sku %s journal replays to the row", sku)

		// Each entry's before/after chain is consistent with its deltas.
		require.Zero(t, count(t, s, `SELECT COUNT(*) FROM inventory_journal
			WHERE sku_id = ? AND available_after - available_before <> delta_available`, sku))
	}

	var rows []struct {
		OrderID  string
		Status   string
		Types    string
		Captured int64
	}
	require.NoError(t, db.Raw(`SELECT o.order_id, o.status,
			(SELECT COALESCE(GROUP_CONCAT(DISTINCT j.type ORDER BY j.type), '') FROM inventory_journal j WHERE j.ref_id = o.order_id) AS types,
			(SELECT COUNT(*) FROM payments p WHERE p.order_id = o.order_id AND p.status = 'CAPTURED') AS captured
		FROM orders o`).Scan(&rows).Error)
	want := map[string]string{
		string(flashsale.StatusPendingPayment): "RESERVE",
		string(flashsale.StatusPaid):           "RESERVE,SELL",
		string(flashsale.StatusExpired):        "RELEASE,RESERVE",
		string(flashsale.StatusCancelled):      "RELEASE,RESERVE",
	}
	for _, r := range rows {
		if r.Status == string(flashsale.StatusCancelled) && r.Types == "REFUND,RESERVE,SELL" {
			// Paid, then refunded by a void (RefundOrder).
			require.Zero(t, r.Captured, "order %s refunded keeps no captured payment", r.OrderID)
			continue
		}
		require.Equal(t, want[r.Status], r.Types, "order %s (%s) journal", r.OrderID, r.Status)
		wantCaptured := int64(0)
		if r.Status == string(flashsale.StatusPaid) {
			wantCaptured = 1
		}
		require.Equal(t, wantCaptured, r.Captured, "order %s (%s) captured payments", r.OrderID, r.Status)
	}
	require.Zero(t, count(t, s, `SELECT COUNT(*) FROM (SELECT ref_id FROM inventory_journal WHERE type IN ('SELL', 'RELEASE')
		GROUP BY ref_id, sku_id HAVING COUNT(DISTINCT type) > 1) x`), "no order both sold and released")
}
