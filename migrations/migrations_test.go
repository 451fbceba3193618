//go:build integration

package migrations_test

import (
	"context"
	"database/sql"
	"errors"
	"io/fs"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/pressly/goose/v3"
	"github.com/stretchr/testify/require"

	"github.com/flashsale/flashsale/internal/testenv"
	"github.com/flashsale/flashsale/migrations"
)

var tables = []string{"inventory", "orders", "order_items", "inventory_journal", "payments", "buyer_holdings", "inventory_buckets", "sale_seeds"}

func openDB(t *testing.T) *sql.DB {
	t.Helper()
	db, err := sql.Open("mysql", testenv.MySQLDSN(t))
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	return db
}

func provider(t *testing.T, db *sql.DB) *goose.Provider {
	t.Helper()
	p, err := goose.NewProvider(goose.DialectMySQL, db, migrations.FS)
	require.NoError(t, err)
	return p
}

func up(t *testing.T, db *sql.DB) {
	t.Helper()
	_, err := provider(t, db).Up(context.Background())
	require.NoError(t, err)
}

func existingTables(t *testing.T, db *sql.DB) map[string]bool {
	t.Helper()
	rows, err := db.Query(`SELECT table_name FROM information_schema.tables WHERE table_schema = DATABASE()`)
	require.NoError(t, err)
	defer rows.Close()
	got := map[string]bool{}
	for rows.Next() {
		var name string
		require.NoError(t, rows.Scan(&name))
		got[name] = true
	}
	require.NoError(t, rows.Err())
	return got
}

func TestUpDownUp(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	files, err := fs.Glob(migrations.FS, "*.sql")
	require.NoError(t, err)
	require.NotEmpty(t, files)

	p := provider(t, db)
	res, err := p.Up(ctx)
	require.NoError(t, err)
	require.Len(t, res, len(files), "every migration applies to an empty database")
	got := existingTables(t, db)
	for _, name := range tables {
		require.True(t, got[name], "table %s created", name)
	}

	// Re-applying, also from a fresh provider as a restarted process would.
	res, err = p.Up(ctx)
	require.NoError(t, err)
	require.Empty(t, res, "second Up is a no-op")
	res, err = provider(t, db).Up(ctx)
	require.NoError(t, err)
	require.Empty(t, res)
	pending, err := p.HasPending(ctx)
	require.NoError(t, err)
	require.False(t, pending)

	// Down sections must undo everything so a rollback is possible.
	_, err = p.DownTo(ctx, 0)
	require.NoError(t, err)
	got = existingTables(t, db)
	for _, name := range tables {
		require.False(t, got[name], "table %s dropped", name)
	}
	res, err = p.Up(ctx)
	require.NoError(t, err)
	require.Len(t, res, len(files))
}

func TestTablesAreInnoDBUTF8MB4(t *testing.T) {
	db := openDB(t)
	up(t, db)
	for _, name := range tables {
		var engine, collation string
		require.NoError(t, db.QueryRow(`SELECT engine, table_collation FROM information_schema.tables
			WHERE table_schema = DATABASE() AND table_name = ?`, name).Scan(&engine, &collation))
		require.Equal(t, "InnoDB", engine, name)
		require.Equal(t, "utf8mb4_bin", collation, name)
	}
}

// checkViolation reports whether err is a CHECK constraint failure: MariaDB
// ER_CONSTRAINT_FAILED (4025) or MySQL ER_CHECK_CONSTRAINT_VIOLATED (3819).
func checkViolation(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && (me.Number == 4025 || me.Number == 3819)
}

func TestCheckConstraintsRejectBadRows(t *testing.T) {
	db := openDB(t)
	up(t, db)

	// One valid row in every table, so each case breaks exactly one rule.
	seed := []string{
		`INSERT INTO inventory (sku_id, total, available, frozen, sold, price, bucket_count, per_user_limit)
			VALUES ('sku', 10, 7, 2, 1, 500, 4, 1)`,
		`INSERT INTO orders (order_id, user_id, status, amount, pay_by) VALUES ('o1', 'u1', 'PENDING_PAYMENT', 1000, NOW(3))`,
		`INSERT INTO order_items (order_id, sku_id, quantity, unit_price) VALUES ('o1', 'sku', 2, 500)`,
		`INSERT INTO inventory_journal (sku_id, ref_id, type, delta_available, delta_frozen, delta_sold,
			available_before, available_after, frozen_after, sold_after) VALUES ('sku', 'o1', 'RESERVE', -2, 2, 0, 9, 7, 2, 1)`,
		`INSERT INTO payments (transaction_id, order_id, amount, status) VALUES ('t1', 'o1', 1000, 'CAPTURED')`,
	}
	for _, q := range seed {
		_, err := db.Exec(q)
		require.NoError(t, err, q)
	}

	cases := []struct {
		name       string
		query      string
		constraint string
	}{
		{"available negative (sum kept)", `UPDATE inventory SET available = available - 8, total = total - 8 WHERE sku_id = 'sku'`, "inventory_available_nonneg"},
		{"frozen negative (sum kept)", `UPDATE inventory SET frozen = -1, available = available + 3 WHERE sku_id = 'sku'`, "inventory_frozen_nonneg"},
		{"sold negative (sum kept)", `UPDATE inventory SET sold = -1, available = available + 2 WHERE sku_id = 'sku'`, "inventory_sold_nonneg"},
		{"total negative", `UPDATE inventory SET total = -1, available = 0, frozen = 0, sold = -1 WHERE sku_id = 'sku'`, "inventory_"},
		{"sum broken: unit appears", `UPDATE inventory SET available = available + 1 WHERE sku_id = 'sku'`, "inventory_balance"},
		{"sum broken: unit vanishes", `UPDATE inventory SET frozen = frozen - 1 WHERE sku_id = 'sku'`, "inventory_balance"},
		{"oversell via raw update", `UPDATE inventory SET available = available - 100, frozen = frozen + 100 WHERE sku_id = 'sku'`, "inventory_available_nonneg"},
		{"price negative", `UPDATE inventory SET price = -1 WHERE sku_id = 'sku'`, "inventory_price_nonneg"},
		{"buckets zero", `UPDATE inventory SET bucket_count = 0 WHERE sku_id = 'sku'`, "inventory_buckets_range"},
		{"buckets too many", `UPDATE inventory SET bucket_count = 1025 WHERE sku_id = 'sku'`, "inventory_buckets_range"},
		{"per-user limit zero", `UPDATE inventory SET per_user_limit = 0 WHERE sku_id = 'sku'`, "inventory_limit_positive"},
		{"new sku unbalanced", `INSERT INTO inventory (sku_id, total, available, price, bucket_count) VALUES ('x', 5, 4, 1, 1)`, "inventory_balance"},
		{"order status unknown", `UPDATE orders SET status = 'SHIPPED' WHERE order_id = 'o1'`, "orders_status_valid"},
		{"order amount negative", `UPDATE orders SET amount = -1 WHERE order_id = 'o1'`, "orders_amount_nonneg"},
		{"item quantity zero", `UPDATE order_items SET quantity = 0 WHERE order_id = 'o1'`, "order_items_quantity_positive"},
		{"item price negative", `UPDATE order_items SET unit_price = -1 WHERE order_id = 'o1'`, "order_items_price_nonneg"},
		{"journal type unknown", `UPDATE inventory_journal SET type = 'STEAL' WHERE ref_id = 'o1'`, "inventory_journal_type_valid"},
		{"payment status unknown", `UPDATE payments SET status = 'PENDING' WHERE transaction_id = 't1'`, "payments_status_valid"},
		{"payment amount negative", `UPDATE payments SET amount = -1 WHERE transaction_id = 't1'`, "payments_amount_nonneg"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := db.Exec(tc.query)
			require.Error(t, err)
			require.True(t, checkViolation(err), "want CHECK violation, got %v", err)
			require.Contains(t, err.Error(), tc.constraint)
		})
	}

	// The seed rows are untouched by the rejected statements.
	var total, available, frozen, sold int64
	require.NoError(t, db.QueryRow(`SELECT total, available, frozen, sold FROM inventory WHERE sku_id = 'sku'`).
		Scan(&total, &available, &frozen, &sold))
	require.Equal(t, []int64{10, 7, 2, 1}, []int64{total, available, frozen, sold})
}

func TestUniqueKeys(t *testing.T) {
	db := openDB(t)
	up(t, db)
	_, err := db.Exec(`INSERT INTO orders (order_id, user_id, status, amount, pay_by) VALUES ('o1', 'u1', 'PENDING_PAYMENT', 0, NOW(3))`)
	require.NoError(t, err)

	cases := []struct {
		name  string
		query string
	}{
		{"order id", `INSERT INTO orders (order_id, user_id, status, amount, pay_by) VALUES ('o2', 'u2', 'PAID', 0, NOW(3))`},
		{"order item per sku", `INSERT INTO order_items (order_id, sku_id, quantity, unit_price) VALUES ('o1', 's', 1, 1)`},
		{"journal per ref/sku/type", `INSERT INTO inventory_journal (sku_id, ref_id, type, delta_available, delta_frozen, delta_sold,
			available_before, available_after, frozen_after, sold_after) VALUES ('s', 'o1', 'RESERVE', 0, 0, 0, 0, 0, 0, 0)`},
		{"payment transaction id", `INSERT INTO payments (transaction_id, order_id, amount, status) VALUES ('t1', 'o1', 0, 'CAPTURED')`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := db.Exec(tc.query)
			require.NoError(t, err, "first insert")
			_, err = db.Exec(tc.query)
			var me *mysql.MySQLError
			require.ErrorAs(t, err, &me)
			require.EqualValues(t, 1062, me.Number, "second insert is a duplicate key")
		})
	}

	// Items cannot point at a missing order.
	_, err = db.Exec(`INSERT INTO order_items (order_id, sku_id, quantity, unit_price) VALUES ('nope', 's', 1, 1)`)
	require.Error(t, err)
}
