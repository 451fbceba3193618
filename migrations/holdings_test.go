//go:build integration

package migrations_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// Migration 00005 carries a live sale across: every buyer's units of the
// current sale of each SKU (PENDING_PAYMENT and PAID orders created since
// its sale_started_at) land on their buyer_holdings row, as the old SUM
// counted them; closed orders and orders of an earlier sale do not count.
func TestHoldingsBackfill(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	p := provider(t, db)
	_, err := p.UpTo(ctx, 4)
	require.NoError(t, err)

	seed := []string{
		`INSERT INTO inventory (sku_id, total, available, frozen, sold, price, bucket_count, per_user_limit, sale_started_at)
			VALUES ('phone', 10, 3, 4, 3, 500, 4, 5, '2026-12-01 10:00:00.000'),
			       ('case', 10, 9, 1, 0, 100, 4, 1, '2026-12-01 10:00:00.000')`,
		`INSERT INTO orders (order_id, user_id, status, amount, pay_by, created_at) VALUES
			('old', 'alice', 'PAID', 500, NOW(3), '2026-11-30 10:00:00.000'),
			('a1', 'alice', 'PAID', 1500, NOW(3), '2026-12-01 10:00:01.000'),
			('a2', 'alice', 'PENDING_PAYMENT', 1100, NOW(3), '2026-12-01 10:00:02.000'),
			('a3', 'alice', 'EXPIRED', 500, NOW(3), '2026-12-01 10:00:03.000'),
			('b1', 'bob', 'PENDING_PAYMENT', 1000, NOW(3), '2026-12-01 10:00:04.000'),
			('c1', 'carol', 'CANCELLED', 500, NOW(3), '2026-12-01 10:00:05.000')`,
		`INSERT INTO order_items (order_id, sku_id, quantity, unit_price) VALUES
			('old', 'phone', 1, 500), ('a1', 'phone', 3, 500), ('a2', 'phone', 2, 500), ('a2', 'case', 1, 100),
			('a3', 'phone', 1, 500), ('b1', 'phone', 2, 500), ('c1', 'phone', 1, 500)`,
	}
	for _, q := range seed {
		_, err := db.ExecContext(ctx, q)
		require.NoError(t, err, q)
	}
	_, err = p.UpTo(ctx, 5)
	require.NoError(t, err)

	rows, err := db.QueryContext(ctx, `SELECT sku_id, user_id, held, max_held FROM buyer_holdings ORDER BY sku_id, user_id`)
	require.NoError(t, err)
	defer rows.Close()
	type holding struct {
		sku, user     string
		held, maxHeld int64
	}
	var got []holding
	for rows.Next() {
		var h holding
		require.NoError(t, rows.Scan(&h.sku, &h.user, &h.held, &h.maxHeld))
		got = append(got, h)
	}
	require.NoError(t, rows.Err())
	require.Equal(t, []holding{
		{"case", "alice", 1, 1},
		{"phone", "alice", 5, 5},
		{"phone", "bob", 2, 5},
	}, got)

	// The row's CHECK is the limit: one more unit for alice is refused.
	_, err = db.ExecContext(ctx, `INSERT INTO buyer_holdings (sku_id, sale_started_at, user_id, held, max_held)
		VALUES ('phone', '2026-12-01 10:00:00.000', 'alice', 1, 5) ON DUPLICATE KEY UPDATE held = held + VALUES(held)`)
	require.ErrorContains(t, err, "buyer_holdings_within_limit")
}
