//go:build integration

package orderdb_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/flashsale/flashsale"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"

	"github.com/flashsale/flashsale/internal/orderdb"
	"github.com/flashsale/flashsale/internal/testenv"
)

// missingDBDSN returns a DSN naming a database that does not exist yet, and
// drops it when the test ends.
func missingDBDSN(t *testing.T) string {
	t.Helper()
	cfg, err := mysql.ParseDSN(testenv.MySQLDSN(t))
	require.NoError(t, err)
	cfg.DBName += "_created"
	admin := cfg.Clone()
	admin.DBName = ""
	t.Cleanup(func() {
		db, err := sql.Open("mysql", admin.FormatDSN())
		if err != nil {
			return
		}
		defer db.Close()
		_, _ = db.Exec("DROP DATABASE IF EXISTS `" + cfg.DBName + "`")
	})
	return cfg.FormatDSN()
}

func TestOpenCreatesDatabaseAndMigratesOnce(t *testing.T) {
	ctx := context.Background()
	dsn := missingDBDSN(t)

	// Several processes starting at once: all succeed, migrations run once.
	const n = 6
	stores := make([]*orderdb.Store, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { stores[i], errs[i] = orderdb.Open(ctx, dsn) })
	}
	wg.Wait()
	for i := range n {
		require.NoError(t, errs[i])
		t.Cleanup(func() { _ = stores[i].Close() })
	}
	s := stores[0]
	require.NoError(t, s.Ping(ctx))
	require.Equal(t, int64(1), count(t, s, `SELECT COUNT(*) FROM goose_db_version WHERE version_id = 1 AND is_applied`),
		"migration 1 recorded exactly once")

	// Reopening an up-to-date database is a no-op.
	again, err := orderdb.Open(ctx, dsn)
	require.NoError(t, err)
	require.NoError(t, again.Close())
	require.Equal(t, int64(1), count(t, s, `SELECT COUNT(*) FROM goose_db_version WHERE version_id = 1`))

	// The store works on the created database.
	putSKU(t, s, "sku", 3, 100)
	createOrder(t, s, "o1", item("sku", 1))
}

func TestOpenRejectsBadDSN(t *testing.T) {
	_, err := orderdb.Open(context.Background(), "root@tcp(127.0.0.1:3306)/")
	require.ErrorIs(t, err, &flashsale.Error{Code: flashsale.Invalid})
	_, err = orderdb.Open(context.Background(), "::not a dsn")
	require.Error(t, err)
}

func TestTimesAreUTCAndRoundTrip(t *testing.T) {
	s := newStore(t)
	putSKU(t, s, "sku", 5, 100)
	payBy := time.Date(2030, 1, 2, 3, 4, 5, 678_901_234, time.FixedZone("CST", 8*3600))
	created, err := s.CreateOrder(context.Background(), orderdb.NewOrder{
		Order: flashsale.Order{OrderID: "o1", UserID: "u1", Items: []flashsale.Item{item("sku", 1)}},
		PayBy: payBy,
	})
	require.NoError(t, err)
	require.Equal(t, time.UTC, created.PayBy.Location())
	require.True(t, created.PayBy.Equal(payBy.Truncate(time.Millisecond)))

	read, err := s.Order(context.Background(), "o1")
	require.NoError(t, err)
	require.Equal(t, created, read, "returned order equals a fresh read")
	require.Equal(t, time.UTC, read.CreatedAt.Location())

	// The server session stores UTC too, so DB-side NOW(3) agrees with Go.
	var skew float64
	require.NoError(t, s.DB().Raw(`SELECT ABS(TIMESTAMPDIFF(SECOND, created_at, UTC_TIMESTAMP(3))) FROM orders WHERE order_id = 'o1'`).Scan(&skew).Error)
	require.Less(t, skew, 60.0)

	b, err := json.Marshal(read)
	require.NoError(t, err)
	require.Contains(t, string(b), `"order_id":"o1"`)
	require.Contains(t, string(b), `"payments":[]`)
	require.NotContains(t, string(b), `closed_at`)
}

func TestContextCancelled(t *testing.T) {
	s := newStore(t)
	putSKU(t, s, "sku", 5, 100)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := s.CreateOrder(ctx, newOrder("o1", "u1", item("sku", 1)))
	require.True(t, errors.Is(err, context.Canceled), "got %v", err)
	require.Equal(t, int64(5), inventory(t, s, "sku").Available)
}
