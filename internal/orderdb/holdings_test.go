//go:build integration

package orderdb_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/flashsale/flashsale"

	"github.com/stretchr/testify/require"

	"github.com/flashsale/flashsale/internal/orderdb"
)

// The store sends a stock move and its journal entry in one packet to
// MariaDB: that is what makes the hot row's section one round trip.
func TestStockMoveIsOneRoundTrip(t *testing.T) {
	require.True(t, newStore(t).Batched())
}

// checkHoldings verifies that every buyer's row of sku's current sale
// holds exactly the units of their PENDING_PAYMENT and PAID orders of that
// sale, and that nobody passed the limit.
func checkHoldings(t *testing.T, s *orderdb.Store, sku string, limit int64) {
	t.Helper()
	var rows []struct {
		UserID string
		Held   int64
		Units  int64
	}
	require.NoError(t, s.DB().Raw(`SELECT h.user_id, h.held, COALESCE((SELECT SUM(i.quantity) FROM orders o
			JOIN order_items i ON i.order_id = o.order_id AND i.sku_id = h.sku_id
			WHERE o.user_id = h.user_id AND o.status IN ('PENDING_PAYMENT', 'PAID') AND o.created_at >= v.sale_started_at), 0) AS units
		FROM buyer_holdings h JOIN inventory v ON v.sku_id = h.sku_id AND v.sale_started_at = h.sale_started_at
		WHERE h.sku_id = ?`, sku).Scan(&rows).Error)
	for _, r := range rows {
		require.Equal(t, r.Units, r.Held, "user %s: held = units of open and paid orders", r.UserID)
		require.LessOrEqual(t, r.Held, limit, "user %s within the limit", r.UserID)
	}
	require.Zero(t, count(t, s, `SELECT COUNT(DISTINCT o.user_id) FROM orders o JOIN order_items i ON i.order_id = o.order_id
		WHERE i.sku_id = ? AND o.status IN ('PENDING_PAYMENT', 'PAID') AND NOT EXISTS (
			SELECT 1 FROM buyer_holdings h WHERE h.sku_id = i.sku_id AND h.user_id = o.user_id)`, sku),
		"every buyer with units has a row")
}

// A sale through the short section, on both of its paths (one packet,
// and the statement-by-statement one of servers without multi-statement
// packets): many buyers at once, each over their limit, against too little
// stock; then pays and cancels at once; then the buyers again. Every count
// is exact: no oversell, no buyer over the limit, the rows follow the
// orders.
func TestShortSectionSale(t *testing.T) {
	for _, batched := range []bool{true, false} {
		t.Run(fmt.Sprintf("batched=%v", batched), func(t *testing.T) {
			ctx := context.Background()
			s := newStore(t)
			s.SetBatched(batched)
			const users, tries, limit = 12, 5, 2
			putLimitedSKU(t, s, "hot", 30, limit)

			// Phase 1: 12 buyers x 5 orders for 30 units, limit 2: the
			// limit binds, each buyer gets exactly 2.
			errs := make([]error, users*tries)
			fns := make([]func(), 0, users*tries)
			for u := range users {
				for k := range tries {
					fns = append(fns, func() {
						_, errs[u*tries+k] = s.CreateOrder(ctx, newOrder(fmt.Sprintf("p1-%d-%d", u, k), fmt.Sprintf("u%d", u), item("hot", 1)))
					})
				}
			}
			run(fns)
			won := make(map[int][]string)
			for i, err := range errs {
				if err == nil {
					won[i/tries] = append(won[i/tries], fmt.Sprintf("p1-%d-%d", i/tries, i%tries))
					continue
				}
				require.ErrorIs(t, err, &flashsale.Error{Code: flashsale.LimitExceeded})
			}
			for u := range users {
				require.Len(t, won[u], limit, "user %d", u)
			}
			require.Equal(t, orderdb.Inventory{SKU: "hot", Total: 30, Available: 6, Frozen: 24, Price: 100, Buckets: 4, PerUserLimit: limit}, inventory(t, s, "hot"))
			checkHoldings(t, s, "hot", limit)
			checkInvariants(t, s, "hot")

			// Phase 2, at once: every buyer pays one order and cancels the
			// other.
			fns = fns[:0]
			for u := range users {
				fns = append(fns, func() {
					_, err := s.ConfirmPayment(ctx, won[u][0], "txn-"+won[u][0], 100)
					require.NoError(t, err)
				}, func() {
					_, err := s.CloseOrder(ctx, won[u][1], flashsale.StatusCancelled, "changed mind")
					require.NoError(t, err)
				})
			}
			run(fns)
			require.Equal(t, orderdb.Inventory{SKU: "hot", Total: 30, Available: 18, Sold: 12, Price: 100, Buckets: 4, PerUserLimit: limit}, inventory(t, s, "hot"))
			checkHoldings(t, s, "hot", limit)

			// Phase 3: 5 more orders each: one unit of each buyer's limit is
			// free again, and 18 units for 12 buyers, so exactly 12 win.
			fns = fns[:0]
			var wins [users * tries]bool
			for u := range users {
				for k := range tries {
					fns = append(fns, func() {
						_, err := s.CreateOrder(ctx, newOrder(fmt.Sprintf("p3-%d-%d", u, k), fmt.Sprintf("u%d", u), item("hot", 1)))
						if err == nil {
							wins[u*tries+k] = true
							return
						}
						require.ErrorIs(t, err, &flashsale.Error{Code: flashsale.LimitExceeded})
					})
				}
			}
			run(fns)
			for u := range users {
				n := 0
				for k := range tries {
					if wins[u*tries+k] {
						n++
					}
				}
				require.Equal(t, 1, n, "user %d", u)
			}
			require.Equal(t, orderdb.Inventory{SKU: "hot", Total: 30, Available: 6, Frozen: 12, Sold: 12, Price: 100, Buckets: 4, PerUserLimit: limit}, inventory(t, s, "hot"))
			checkHoldings(t, s, "hot", limit)
			checkInvariants(t, s, "hot")
		})
	}
}

// When stock, not the limit, binds, exactly the stock is sold and the
// buyers refused hold nothing on their rows.
func TestShortSectionNoOversell(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	const buyers = 60
	putLimitedSKU(t, s, "few", 15, 3)
	errs := make([]error, buyers)
	fns := make([]func(), buyers)
	for i := range buyers {
		fns[i] = func() {
			_, errs[i] = s.CreateOrder(ctx, newOrder(fmt.Sprintf("n-%d", i), fmt.Sprintf("buyer-%d", i%20), item("few", 1)))
		}
	}
	run(fns)
	ok := 0
	for _, err := range errs {
		if err == nil {
			ok++
			continue
		}
		require.ErrorIs(t, err, &flashsale.Error{Code: flashsale.StockDrift})
	}
	require.Equal(t, 15, ok)
	require.Equal(t, int64(15), inventory(t, s, "few").Frozen)
	require.Equal(t, int64(15), count(t, s, `SELECT COALESCE(SUM(held), 0) FROM buyer_holdings WHERE sku_id = 'few'`))
	checkHoldings(t, s, "few", 3)
	checkInvariants(t, s, "few")
}

// A new sale (PutSKU) starts every buyer's count again, with the new
// limit, and keeps the old sale's rows apart.
func TestHoldingsArePerSale(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	putLimitedSKU(t, s, "sale", 10, 1)
	o, err := s.CreateOrder(ctx, newOrder("s1", "alice", item("sale", 1)))
	require.NoError(t, err)
	_, err = s.ConfirmPayment(ctx, "s1", "txn-s1", o.Amount)
	require.NoError(t, err)
	putLimitedSKU(t, s, "sale", 10, 2)
	_, err = s.CreateOrder(ctx, newOrder("s2", "alice", item("sale", 2)))
	require.NoError(t, err)
	_, err = s.CreateOrder(ctx, newOrder("s3", "alice", item("sale", 1)))
	require.ErrorIs(t, err, &flashsale.Error{Code: flashsale.LimitExceeded})
	require.Equal(t, int64(2), count(t, s, `SELECT COUNT(*) FROM buyer_holdings WHERE sku_id = 'sale' AND user_id = 'alice'`))
	checkHoldings(t, s, "sale", 2)
}
