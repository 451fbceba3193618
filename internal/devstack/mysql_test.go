package devstack

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/internal/orderdb"
)

func runMySQL(t *testing.T) *MySQL {
	t.Helper()
	// The first build of the server compiles go-mysql-server, a minute or
	// more on a busy two-core box with a cold build cache (CI once killed
	// it at 30 s): the build is bounded by the test's own timeout, and the
	// 30 s below bound the server's start alone.
	_, err := mysqldBinary(context.Background(), io.Discard)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	m, err := StartMySQL(ctx, MySQLOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, m.Stop()) })
	return m
}

func openStore(t *testing.T, dsn string) *orderdb.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := orderdb.Open(ctx, dsn)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func rawDB(t *testing.T, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open("mysql", dsn)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	return db
}

func scalar(t *testing.T, db *sql.DB, query string, args ...any) int64 {
	t.Helper()
	var n int64
	require.NoError(t, db.QueryRow(query, args...).Scan(&n), query)
	return n
}

func newOrder(id, user string, qty int64) orderdb.NewOrder {
	return orderdb.NewOrder{
		Order: flashsale.Order{OrderID: id, UserID: user, Items: []flashsale.Item{{SKU: "hot", Quantity: qty}}},
		PayBy: time.Now().Add(15 * time.Minute),
	}
}

func TestMySQLDSN(t *testing.T) {
	m := runMySQL(t)
	require.Equal(t, "root@tcp("+m.Addr()+")/flashsale?parseTime=true", m.DSN())
	host, _, err := net.SplitHostPort(m.Addr())
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1", host)
}

// orderdb.Open applies the goose migrations under its GET_LOCK migration
// lock; three processes opening at once must end with one schema, applied
// once. The schema keeps its named CHECK constraints (reported with MySQL's
// error number) and byte-wise utf8mb4_bin keys.
func TestMySQLMigrations(t *testing.T) {
	ctx := context.Background()
	m := runMySQL(t)

	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i := range errs {
		wg.Go(func() {
			s, err := orderdb.Open(ctx, m.DSN())
			if err == nil {
				err = s.Close()
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	s := openStore(t, m.DSN())
	db := rawDB(t, m.DSN())
	require.EqualValues(t, 1, scalar(t, db, `SELECT COUNT(*) FROM goose_db_version WHERE version_id = 1`),
		"the migration was applied once")
	for _, table := range []string{"inventory", "orders", "order_items", "inventory_journal", "payments"} {
		var engine, collation string
		require.NoError(t, db.QueryRow(`SELECT engine, table_collation FROM information_schema.tables
			WHERE table_schema = DATABASE() AND table_name = ?`, table).Scan(&engine, &collation))
		require.Equal(t, []string{"InnoDB", "utf8mb4_bin"}, []string{engine, collation}, table)
	}

	_, err := s.PutSKU(ctx, flashsale.SKU{ID: "sku", Total: 10, Price: 1, Buckets: 1, PerUserLimit: 1})
	require.NoError(t, err)
	_, err = db.Exec(`UPDATE inventory SET available = available + 1 WHERE sku_id = 'sku'`)
	var me *mysql.MySQLError
	require.ErrorAs(t, err, &me)
	require.EqualValues(t, 3819, me.Number, "ER_CHECK_CONSTRAINT_VIOLATED: %v", err)
	require.Contains(t, me.Message, "inventory_balance")
	_, err = db.Exec(`UPDATE inventory SET available = -1, total = total - 11 WHERE sku_id = 'sku'`)
	require.ErrorAs(t, err, &me)
	require.Contains(t, me.Message, "_nonneg")

	// utf8mb4_bin: ids differing only in case are different keys, as they
	// are in Redis and Go.
	_, err = s.PutSKU(ctx, flashsale.SKU{ID: "SKU", Total: 3, Price: 1, Buckets: 1, PerUserLimit: 1})
	require.NoError(t, err)
	lower, err := s.Inventory(ctx, "sku")
	require.NoError(t, err)
	upper, err := s.Inventory(ctx, "SKU")
	require.NoError(t, err)
	require.Equal(t, []int64{10, 3}, []int64{lower.Total, upper.Total})
}

// One order through its whole life, with the repeats and races Temporal's
// retries produce, answering as internal/orderdb's tests expect of MariaDB.
func TestMySQLOrderLifecycle(t *testing.T) {
	ctx := context.Background()
	m := runMySQL(t)
	s := openStore(t, m.DSN())

	inv, err := s.PutSKU(ctx, flashsale.SKU{ID: "hot", Total: 10, Price: 250, Buckets: 16, PerUserLimit: 5})
	require.NoError(t, err)
	require.Equal(t, orderdb.Inventory{SKU: "hot", Total: 10, Available: 10, Price: 250, Buckets: 16, PerUserLimit: 5}, inv)

	o, err := s.CreateOrder(ctx, newOrder("o1", "u1", 3))
	require.NoError(t, err)
	require.Equal(t, flashsale.StatusPendingPayment, o.Status)
	require.EqualValues(t, 750, o.Amount)
	again, err := s.CreateOrder(ctx, newOrder("o1", "u1", 3))
	require.NoError(t, err)
	require.Equal(t, o.CreatedAt, again.CreatedAt, "a retried create returns the first order")
	requireInventory(t, s, 7, 3, 0)

	_, err = s.ConfirmPayment(ctx, "o1", "t-wrong", 749)
	require.Equal(t, flashsale.AmountMismatch, flashsale.ErrorCode(err))
	paid, err := s.ConfirmPayment(ctx, "o1", "t1", 750)
	require.NoError(t, err)
	require.Equal(t, flashsale.PaymentCaptured, paid.Payment.Status)
	require.Equal(t, flashsale.StatusPaid, paid.Order.Status)
	dup, err := s.ConfirmPayment(ctx, "o1", "t1", 750)
	require.NoError(t, err)
	require.True(t, dup.Duplicate)
	second, err := s.ConfirmPayment(ctx, "o1", "t2", 750)
	require.NoError(t, err)
	require.Equal(t, flashsale.PaymentRefundRequired, second.Payment.Status, "a second payment is refunded")
	_, err = s.CloseOrder(ctx, "o1", flashsale.StatusExpired, "timeout")
	require.Equal(t, flashsale.AlreadyPaid, flashsale.ErrorCode(err))
	requireInventory(t, s, 7, 0, 3)

	_, err = s.CreateOrder(ctx, newOrder("o2", "u2", 2))
	require.NoError(t, err)
	closed, err := s.CloseOrder(ctx, "o2", flashsale.StatusExpired, "payment timeout")
	require.NoError(t, err)
	require.Equal(t, flashsale.StatusExpired, closed.Status)
	_, err = s.CloseOrder(ctx, "o2", flashsale.StatusExpired, "payment timeout")
	require.NoError(t, err, "closing again is a no-op")
	_, err = s.CloseOrder(ctx, "o2", flashsale.StatusCancelled, "user")
	require.Equal(t, flashsale.OrderClosed, flashsale.ErrorCode(err))
	late, err := s.ConfirmPayment(ctx, "o2", "t3", 500)
	require.NoError(t, err)
	require.Equal(t, flashsale.PaymentRefundRequired, late.Payment.Status, "money for an expired order is refunded")
	requireInventory(t, s, 7, 0, 3)

	_, err = s.ConfirmPayment(ctx, "nobody", "t4", 1)
	require.Equal(t, flashsale.OrderNotFound, flashsale.ErrorCode(err))
	refund := orderdb.Payment{TransactionID: "t4", OrderID: "nobody", Amount: 1, Reason: "unknown order"}
	got, err := s.RecordRefund(ctx, refund)
	require.NoError(t, err)
	require.Equal(t, flashsale.PaymentRefundRequired, got.Status)
	got2, err := s.RecordRefund(ctx, refund)
	require.NoError(t, err)
	require.Equal(t, got, got2, "a repeated refund returns the stored row")
	pays, err := s.Payments(ctx, "nobody")
	require.NoError(t, err)
	require.Len(t, pays, 1)
	// A refund for a transaction that was captured reports the capture.
	captured, err := s.RecordRefund(ctx, orderdb.Payment{TransactionID: "t1", OrderID: "o1", Amount: 750})
	require.NoError(t, err)
	require.Equal(t, flashsale.PaymentCaptured, captured.Status)

	_, err = s.CreateOrder(ctx, newOrder("o3", "u3", 100))
	require.Equal(t, flashsale.StockDrift, flashsale.ErrorCode(err))
	requireInventory(t, s, 7, 0, 3)
}

func requireInventory(t *testing.T, s *orderdb.Store, available, frozen, sold int64) {
	t.Helper()
	inv, err := s.Inventory(context.Background(), "hot")
	require.NoError(t, err)
	require.Equal(t, []int64{available, frozen, sold}, []int64{inv.Available, inv.Frozen, inv.Sold},
		"available, frozen, sold")
}

// The oversell guard under contention: 50 buyers race for 20 units, then
// every winner's payment races its expiry. The in-memory storage alone
// sells to all 50 (see serialHandler); served one transaction at a time it
// must sell exactly 20 and settle each order exactly once.
func TestMySQLConcurrentOrders(t *testing.T) {
	ctx := context.Background()
	m := runMySQL(t)
	s := openStore(t, m.DSN())
	const units, buyers = 20, 50
	_, err := s.PutSKU(ctx, flashsale.SKU{ID: "hot", Total: units, Price: 100, Buckets: 16, PerUserLimit: 1})
	require.NoError(t, err)

	errs := make([]error, buyers)
	race(buyers, func(i int) {
		_, errs[i] = s.CreateOrder(ctx, newOrder(fmt.Sprintf("o%02d", i), fmt.Sprintf("u%02d", i), 1))
	})
	var won []string
	for i, err := range errs {
		if err == nil {
			won = append(won, fmt.Sprintf("o%02d", i))
			continue
		}
		require.Equal(t, flashsale.StockDrift, flashsale.ErrorCode(err))
	}
	require.Len(t, won, units, "exactly the stock is sold")
	requireInventory(t, s, 0, units, 0)
	db := rawDB(t, m.DSN())
	require.EqualValues(t, units, scalar(t, db, `SELECT COUNT(*) FROM orders`))
	require.EqualValues(t, units, scalar(t, db, `SELECT COUNT(*) FROM inventory_journal WHERE type = 'RESERVE'`))

	// Payment and expiry of each order race (plus a duplicate callback).
	payErrs := make([]error, 2*len(won))
	closeErrs := make([]error, len(won))
	race(3*len(won), func(i int) {
		k := i / 3
		id := won[k]
		if i%3 == 0 {
			_, closeErrs[k] = s.CloseOrder(ctx, id, flashsale.StatusExpired, "timeout")
			return
		}
		_, payErrs[k*2+i%3-1] = s.ConfirmPayment(ctx, id, "txn-"+id, 100)
	})
	for _, err := range payErrs {
		require.NoError(t, err)
	}
	var paid, expired int64
	for i, id := range won {
		o, err := s.Order(ctx, id)
		require.NoError(t, err)
		captured := 0
		for _, p := range o.Payments {
			if p.Status == flashsale.PaymentCaptured {
				captured++
			}
		}
		switch o.Status {
		case flashsale.StatusPaid:
			paid++
			require.Equal(t, 1, captured, id)
			require.ErrorIs(t, closeErrs[i], &flashsale.Error{Code: flashsale.AlreadyPaid}, id)
		case flashsale.StatusExpired:
			expired++
			require.Zero(t, captured, id)
			require.NoError(t, closeErrs[i], id)
			require.Len(t, o.Payments, 1, "%s: the late payment is recorded once, as a refund", id)
			require.Equal(t, flashsale.PaymentRefundRequired, o.Payments[0].Status)
		default:
			t.Fatalf("order %s ended %s", id, o.Status)
		}
	}
	t.Logf("payment won %d races, expiry %d", paid, expired)
	requireInventory(t, s, expired, 0, paid)
	require.EqualValues(t, paid, scalar(t, db, `SELECT COUNT(*) FROM inventory_journal WHERE type = 'SELL'`))
	require.EqualValues(t, expired, scalar(t, db, `SELECT COUNT(*) FROM inventory_journal WHERE type = 'RELEASE'`))
}

// race runs fn(0..n-1) in n goroutines released at the same moment.
func race(n int, fn func(i int)) {
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			fn(i)
		})
	}
	close(start)
	wg.Wait()
}

// Transactions as the store relies on them: a transaction's writes are
// invisible until COMMIT and gone after ROLLBACK, another connection waits
// for it (like a row lock) and then sees the committed row, a failed
// autocommit statement leaves nothing behind, and a waiter that waits too
// long gets MySQL's lock wait timeout.
func TestMySQLTransactions(t *testing.T) {
	ctx := context.Background()
	m, err := StartMySQL(ctx, MySQLOptions{LockWait: 300 * time.Millisecond})
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Stop() })
	db := rawDB(t, m.DSN())
	_, err = db.Exec(`CREATE TABLE t (id INT PRIMARY KEY, n INT NOT NULL, CONSTRAINT n_small CHECK (n < 100))`)
	require.NoError(t, err)
	_, err = db.Exec(`INSERT INTO t VALUES (1, 0)`)
	require.NoError(t, err)
	value := func() int64 { return scalar(t, db, `SELECT n FROM t WHERE id = 1`) }

	tx, err := db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
	require.NoError(t, err)
	_, err = tx.Exec(`UPDATE t SET n = n + 1 WHERE id = 1`)
	require.NoError(t, err)
	_, err = db.Exec(`UPDATE t SET n = n + 10 WHERE id = 1`)
	var me *mysql.MySQLError
	require.ErrorAs(t, err, &me)
	require.EqualValues(t, 1205, me.Number, "ER_LOCK_WAIT_TIMEOUT while the transaction is open")
	require.NoError(t, tx.Rollback())
	require.EqualValues(t, 0, value(), "rolled back")

	tx, err = db.BeginTx(ctx, nil)
	require.NoError(t, err)
	_, err = tx.Exec(`UPDATE t SET n = n + 1 WHERE id = 1`)
	require.NoError(t, err)
	waited := make(chan int64)
	go func() {
		var n int64
		_ = db.QueryRow(`SELECT n FROM t WHERE id = 1`).Scan(&n)
		waited <- n
	}()
	time.Sleep(100 * time.Millisecond)
	require.NoError(t, tx.Commit())
	require.EqualValues(t, 1, <-waited, "the waiting reader sees the commit")

	// A statement that fails half-way (second row breaks the CHECK) in
	// autocommit mode inserts nothing. go-mysql-server leaves the failed
	// statement's transaction open with its copy of the table; unless it is
	// rolled back, the connection's next statement commits that stale copy
	// over what another connection committed in between (n back to 1).
	a, err := db.Conn(ctx)
	require.NoError(t, err)
	defer a.Close()
	b, err := db.Conn(ctx)
	require.NoError(t, err)
	defer b.Close()
	_, err = a.ExecContext(ctx, `INSERT INTO t VALUES (2, 1), (3, 500)`)
	require.ErrorAs(t, err, &me)
	require.EqualValues(t, 3819, me.Number)
	_, err = b.ExecContext(ctx, `UPDATE t SET n = 7 WHERE id = 1`)
	require.NoError(t, err)
	_, err = a.ExecContext(ctx, `INSERT INTO t VALUES (4, 1)`)
	require.NoError(t, err)
	require.EqualValues(t, 7, value(), "the other connection's commit survives")
	require.EqualValues(t, 0, scalar(t, db, `SELECT COUNT(*) FROM t WHERE id IN (2, 3)`), "failed statement undone")
	require.EqualValues(t, 1, scalar(t, db, `SELECT COUNT(*) FROM t WHERE id = 4`))
	require.NoError(t, a.Close())
	require.NoError(t, b.Close())

	// A transaction abandoned by its client (context cancelled) frees the
	// server for everyone else, without committing.
	txCtx, cancel := context.WithCancel(ctx)
	tx, err = db.BeginTx(txCtx, nil)
	require.NoError(t, err)
	_, err = tx.Exec(`UPDATE t SET n = 50 WHERE id = 1`)
	require.NoError(t, err)
	cancel()
	require.Eventually(t, func() bool {
		_, err := db.Exec(`UPDATE t SET n = n + 1 WHERE id = 1`)
		return err == nil
	}, 5*time.Second, 50*time.Millisecond)
	require.EqualValues(t, 8, value(), "the abandoned update was not committed")
}

func TestMySQLStop(t *testing.T) {
	ctx := context.Background()
	m, err := StartMySQL(ctx, MySQLOptions{})
	require.NoError(t, err)
	require.NoError(t, m.Stop())
	require.NoError(t, m.Stop(), "idempotent")
	db, err := sql.Open("mysql", m.DSN())
	require.NoError(t, err)
	defer db.Close()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	err = db.PingContext(ctx)
	require.Error(t, err)
	require.False(t, errors.Is(err, context.DeadlineExceeded), "refused at once, not hanging: %v", err)
}

// The server is a child process; it must not outlive the process that
// started it. Linux's parent-death signal covers a parent killed outright;
// everywhere, the server stops when its stdin (held by the parent) closes.
func TestMySQLStopsWhenStdinCloses(t *testing.T) {
	m, err := StartMySQL(context.Background(), MySQLOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Stop() })
	require.NoError(t, m.stdin.Close())
	select {
	case <-m.exited:
		require.NoError(t, m.waitErr, "a clean shutdown")
	case <-time.After(10 * time.Second):
		t.Fatal("the server still runs 10 s after its stdin closed")
	}
}
