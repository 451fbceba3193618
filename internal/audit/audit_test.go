//go:build integration

package audit_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/flashsale/flashsale"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/flashsale/flashsale/internal/app/apptest"
	"github.com/flashsale/flashsale/internal/audit"
	"github.com/flashsale/flashsale/internal/backend"
	"github.com/flashsale/flashsale/internal/orderdb"
	"github.com/flashsale/flashsale/internal/orders"
	"github.com/flashsale/flashsale/internal/testenv"
	"github.com/flashsale/flashsale/workflows"
)

// stack is one isolated deployment on the real services: its own database
// and task queue, and an in-process worker running the real workflows.
type stack struct {
	b   *backend.Backend
	svc *orders.Service
	rdb *redis.Client
	id  string
}

func newStack(t *testing.T) *stack {
	t.Helper()
	sys := apptest.Start(t, apptest.Options{Name: "audit-test", WorkerConcurrency: 32})
	id, cfg, b := sys.ID, sys.Config, sys.Backend
	s := &stack{b: b, rdb: testenv.Redis(t), id: id,
		svc: &orders.Service{Temporal: b.Temporal, TaskQueue: cfg.TaskQueue, Orders: b.Orders}}
	t.Cleanup(func() {
		keys, _ := s.rdb.Keys(context.Background(), "fs:{sku:audit-"+id+"*").Result()
		if len(keys) > 0 {
			_ = s.rdb.Unlink(context.Background(), keys...).Err()
		}
	})
	return s
}

func (s *stack) deps() audit.Deps {
	return audit.Deps{Stock: s.b.Stock, Orders: s.b.Orders, Temporal: s.b.Temporal}
}

func (s *stack) createSKU(t *testing.T, name string, total, redis int64) string {
	t.Helper()
	sku := "audit-" + s.id + "-" + name
	_, err := s.b.Orders.PutSKU(context.Background(), flashsale.SKU{ID: sku, Total: total, Price: 500, Buckets: 4, PerUserLimit: 5})
	require.NoError(t, err)
	_, err = s.b.Stock.Preheat(context.Background(), sku, redis, 4)
	require.NoError(t, err)
	return sku
}

func (s *stack) place(t *testing.T, orderID, sku string, timeout time.Duration) workflows.Reservation {
	t.Helper()
	res, err := s.svc.Place(context.Background(), workflows.OrderInput{
		OrderID: orderID, UserID: "user-" + orderID, PaymentTimeout: timeout,
		Items: []flashsale.Item{{SKU: sku, Quantity: 1}},
	})
	require.NoError(t, err)
	return res
}

// waitClosed blocks until the order's workflow has completed.
func (s *stack) waitClosed(t *testing.T, orderID string) workflows.OrderView {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var v workflows.OrderView
	require.NoError(t, s.b.Temporal.GetWorkflow(ctx, workflows.OrderWorkflowID(orderID), "").Get(ctx, &v))
	return v
}

// rawSQL runs statements on one connection with CHECK constraints off, so
// a test can write what the schema would refuse, as a bug or an operator
// with a console could.
func (s *stack) rawSQL(t *testing.T, stmts ...string) {
	t.Helper()
	ctx := context.Background()
	sqlDB, err := s.b.Orders.DB().DB()
	require.NoError(t, err)
	conn, err := sqlDB.Conn(ctx)
	require.NoError(t, err)
	defer func() { _ = conn.Close() }()
	_, err = conn.ExecContext(ctx, "SET SESSION check_constraint_checks = 0")
	require.NoError(t, err)
	defer func() { _, _ = conn.ExecContext(ctx, "SET SESSION check_constraint_checks = 1") }()
	for _, stmt := range stmts {
		_, err := conn.ExecContext(ctx, stmt)
		require.NoError(t, err, stmt)
	}
}

func (s *stack) scalar(t *testing.T, query string, args ...any) int64 {
	t.Helper()
	var n int64
	require.NoError(t, s.b.Orders.DB().Raw(query, args...).Scan(&n).Error)
	return n
}

func kinds(r audit.Report) []audit.Kind {
	var out []audit.Kind
	for _, v := range r.Violations {
		out = append(out, v.Kind)
	}
	return out
}

// TestCheck runs a small sale through the real workflows (paid, cancelled
// with a late payment, expired, still open, and a StockDrift refusal),
// checks that it passes, then breaks one invariant at a time with a raw
// SQL or Redis write and checks that exactly that breach is reported.
func TestCheck(t *testing.T) {
	ctx := context.Background()
	s := newStack(t)
	sku := s.createSKU(t, "main", 10, 10)
	// Redis was preheated with one unit MySQL does not have: the second
	// order gets it from Redis, MySQL refuses it (StockDrift), and the
	// workflow keeps the unit out of Redis. That heals the drift; the
	// checker must see it as healed (its order's workflow has ended).
	drifted := s.createSKU(t, "drifted", 1, 2)

	o := func(name string) string { return "audit-" + s.id + "-" + name }
	require.Equal(t, flashsale.StatusPendingPayment, s.place(t, o("paid"), sku, 0).Status)
	_, err := s.svc.Pay(ctx, o("paid"), workflows.Payment{TransactionID: "tx-" + o("paid"), Amount: 500})
	require.NoError(t, err)
	s.place(t, o("cancelled"), sku, 0)
	_, err = s.svc.Cancel(ctx, o("cancelled"))
	require.NoError(t, err)
	late, err := s.svc.Pay(ctx, o("cancelled"), workflows.Payment{TransactionID: "tx-" + o("cancelled"), Amount: 500})
	require.NoError(t, err)
	require.Equal(t, workflows.RefundRequired, late.Refund)
	s.place(t, o("expired"), sku, time.Second)
	require.Equal(t, flashsale.StatusExpired, s.waitClosed(t, o("expired")).Status)
	s.place(t, o("open"), sku, 0)
	s.place(t, o("drift-a"), drifted, 0)
	refused := s.place(t, o("drift-b"), drifted, 0)
	require.Equal(t, flashsale.StockDrift, refused.Reason)
	s.waitClosed(t, o("drift-b"))
	s.waitClosed(t, o("paid"))

	clean, err := audit.Check(ctx, s.deps(), "")
	require.NoError(t, err)
	require.True(t, clean.OK, "a clean sale passes: %+v", clean.Violations)
	require.Len(t, clean.SKUs, 2)
	main := clean.SKUs[1]
	require.Equal(t, sku, main.SKU)
	require.Equal(t, [4]int64{10, 8, 1, 1}, [4]int64{main.Total, main.Available, main.Frozen, main.Sold})
	require.Equal(t, int64(8), main.Redis.RedisUnits)
	// The open order; visibility may still list one that just finished.
	require.GreaterOrEqual(t, main.OpenWorkflows, 1)
	require.Equal(t, int64(1), clean.SKUs[0].Redis.Dead, "the refused order's unit is kept out of redis")

	bucket := func(i int) string { return fmt.Sprintf("fs:{sku:%s:b%d}:stock", sku, i) }
	fullest := func() string {
		for i := range 4 {
			if n, _ := s.rdb.Get(ctx, bucket(i)).Int64(); n > 0 {
				return bucket(i)
			}
		}
		t.Fatal("no bucket holds stock")
		return ""
	}
	lastJournal := func() int64 {
		return s.scalar(t, "SELECT MAX(id) FROM inventory_journal WHERE sku_id = ?", sku)
	}
	secondJournal := func() int64 {
		return s.scalar(t, "SELECT id FROM inventory_journal WHERE sku_id = ? ORDER BY id LIMIT 1 OFFSET 1", sku)
	}
	payBy := func() time.Time {
		ord, err := s.b.Orders.Order(ctx, o("open"))
		require.NoError(t, err)
		return ord.PayBy
	}()
	q := func(format string, args ...any) string { return fmt.Sprintf(format, args...) }

	tests := []struct {
		name string
		// break_ writes the fault and returns the write that undoes it.
		break_ func(t *testing.T) (undo func())
		want   []audit.Kind
	}{
		{
			name: "total no longer balances",
			break_: func(t *testing.T) func() {
				s.rawSQL(t, q("UPDATE inventory SET total = total + 1 WHERE sku_id = '%s'", sku))
				return func() { s.rawSQL(t, q("UPDATE inventory SET total = total - 1 WHERE sku_id = '%s'", sku)) }
			},
			want: []audit.Kind{audit.KindBalance},
		},
		{
			name: "a negative column",
			break_: func(t *testing.T) func() {
				s.rawSQL(t, q("UPDATE inventory SET frozen = -1, available = available + 2 WHERE sku_id = '%s'", sku))
				return func() {
					s.rawSQL(t, q("UPDATE inventory SET frozen = 1, available = available - 2 WHERE sku_id = '%s'", sku))
				}
			},
			want: []audit.Kind{audit.KindNegative, audit.KindFrozen, audit.KindJournalReplay, audit.KindRedisUnder},
		},
		{
			name: "an open order closed without releasing its units",
			break_: func(t *testing.T) func() {
				s.rawSQL(t, q("UPDATE orders SET status = 'EXPIRED' WHERE order_id = '%s'", o("open")))
				return func() {
					s.rawSQL(t, q("UPDATE orders SET status = 'PENDING_PAYMENT' WHERE order_id = '%s'", o("open")))
				}
			},
			// Its workflow still runs, so Redis counts its unit as on the
			// way back: Redis now looks over MySQL too.
			want: []audit.Kind{audit.KindFrozen, audit.KindOrderJournal, audit.KindRedisOver},
		},
		{
			name: "sold units no paid order accounts for",
			break_: func(t *testing.T) func() {
				s.rawSQL(t, q("UPDATE inventory SET sold = sold + 1, total = total + 1 WHERE sku_id = '%s'", sku))
				return func() {
					s.rawSQL(t, q("UPDATE inventory SET sold = sold - 1, total = total - 1 WHERE sku_id = '%s'", sku))
				}
			},
			want: []audit.Kind{audit.KindSold, audit.KindJournalReplay},
		},
		{
			name: "the journal no longer replays to the row",
			break_: func(t *testing.T) func() {
				id := lastJournal()
				s.rawSQL(t, q("UPDATE inventory_journal SET delta_available = delta_available + 1, available_after = available_after + 1 WHERE id = %d", id))
				return func() {
					s.rawSQL(t, q("UPDATE inventory_journal SET delta_available = delta_available - 1, available_after = available_after - 1 WHERE id = %d", id))
				}
			},
			want: []audit.Kind{audit.KindJournalReplay},
		},
		{
			name: "a journal entry that does not follow from the one before",
			break_: func(t *testing.T) func() {
				id := secondJournal()
				s.rawSQL(t, q("UPDATE inventory_journal SET available_before = available_before + 5, available_after = available_after + 5 WHERE id = %d", id))
				return func() {
					s.rawSQL(t, q("UPDATE inventory_journal SET available_before = available_before - 5, available_after = available_after - 5 WHERE id = %d", id))
				}
			},
			want: []audit.Kind{audit.KindJournalChain},
		},
		{
			name: "a paid order journaled as released",
			break_: func(t *testing.T) func() {
				s.rawSQL(t, q("UPDATE inventory_journal SET type = 'RELEASE' WHERE ref_id = '%s' AND type = 'SELL'", o("paid")))
				return func() {
					s.rawSQL(t, q("UPDATE inventory_journal SET type = 'SELL' WHERE ref_id = '%s' AND type = 'RELEASE'", o("paid")))
				}
			},
			want: []audit.Kind{audit.KindOrderJournal},
		},
		{
			name: "money captured on a cancelled order",
			break_: func(t *testing.T) func() {
				s.rawSQL(t, q("UPDATE payments SET status = 'CAPTURED' WHERE transaction_id = 'tx-%s'", o("cancelled")))
				return func() {
					s.rawSQL(t, q("UPDATE payments SET status = 'REFUND_REQUIRED' WHERE transaction_id = 'tx-%s'", o("cancelled")))
				}
			},
			want: []audit.Kind{audit.KindCapturedNotPaid},
		},
		{
			name: "a payment neither captured nor marked for refund",
			break_: func(t *testing.T) func() {
				s.rawSQL(t, q("UPDATE payments SET status = 'LOST' WHERE transaction_id = 'tx-%s'", o("cancelled")))
				return func() {
					s.rawSQL(t, q("UPDATE payments SET status = 'REFUND_REQUIRED' WHERE transaction_id = 'tx-%s'", o("cancelled")))
				}
			},
			want: []audit.Kind{audit.KindPaymentStatus},
		},
		{
			name: "captured for another amount",
			break_: func(t *testing.T) func() {
				s.rawSQL(t, q("UPDATE payments SET amount = 499 WHERE transaction_id = 'tx-%s'", o("paid")))
				return func() { s.rawSQL(t, q("UPDATE payments SET amount = 500 WHERE transaction_id = 'tx-%s'", o("paid"))) }
			},
			want: []audit.Kind{audit.KindCapturedAmount},
		},
		{
			name: "money received in time for an order that expired, never answered",
			break_: func(t *testing.T) func() {
				s.rawSQL(t, q("INSERT INTO payment_receipts (transaction_id, order_id, amount, received_at) SELECT 'tx-lost-%s', order_id, 500, pay_by - INTERVAL 1 SECOND FROM orders WHERE order_id = '%s'", s.id, o("expired")))
				return func() { s.rawSQL(t, q("DELETE FROM payment_receipts WHERE transaction_id = 'tx-lost-%s'", s.id)) }
			},
			want: []audit.Kind{audit.KindReceivedNotKept},
		},
		{
			name: "a paid order captured twice",
			break_: func(t *testing.T) func() {
				s.rawSQL(t, q("INSERT INTO payments (transaction_id, order_id, amount, status, created_at) VALUES ('tx-dup-%s', '%s', 500, 'CAPTURED', NOW(3))", s.id, o("paid")))
				return func() { s.rawSQL(t, q("DELETE FROM payments WHERE transaction_id = 'tx-dup-%s'", s.id)) }
			},
			want: []audit.Kind{audit.KindPaidCaptures},
		},
		{
			name: "redis offers units mysql does not have",
			break_: func(t *testing.T) func() {
				b := fullest()
				require.NoError(t, s.rdb.IncrBy(ctx, b, 3).Err())
				return func() { require.NoError(t, s.rdb.DecrBy(ctx, b, 3).Err()) }
			},
			want: []audit.Kind{audit.KindRedisOver},
		},
		{
			name: "redis lost units mysql has",
			break_: func(t *testing.T) func() {
				b := fullest()
				require.NoError(t, s.rdb.DecrBy(ctx, b, 1).Err())
				return func() { require.NoError(t, s.rdb.IncrBy(ctx, b, 1).Err()) }
			},
			want: []audit.Kind{audit.KindRedisUnder},
		},
		{
			name: "a negative bucket",
			break_: func(t *testing.T) func() {
				b := fullest()
				was, err := s.rdb.Get(ctx, b).Result()
				require.NoError(t, err)
				require.NoError(t, s.rdb.Set(ctx, b, -2, 0).Err())
				return func() { require.NoError(t, s.rdb.Set(ctx, b, was, 0).Err()) }
			},
			want: []audit.Kind{audit.KindRedisNegative, audit.KindRedisUnder},
		},
		{
			name: "redis lost the sku",
			break_: func(t *testing.T) func() {
				key := "fs:{sku:" + sku + "}:buckets"
				require.NoError(t, s.rdb.Del(ctx, key).Err())
				return func() { require.NoError(t, s.rdb.Set(ctx, key, 4, 0).Err()) }
			},
			want: []audit.Kind{audit.KindRedisMissing},
		},
		{
			name: "an order open long past its deadline",
			break_: func(t *testing.T) func() {
				s.rawSQL(t, q("UPDATE orders SET pay_by = UTC_TIMESTAMP(3) - INTERVAL 1 HOUR WHERE order_id = '%s'", o("open")))
				return func() {
					s.rawSQL(t, q("UPDATE orders SET pay_by = '%s' WHERE order_id = '%s'", payBy.Format("2006-01-02 15:04:05.000"), o("open")))
				}
			},
			// MySQL still holds it pending, and its workflow still runs.
			want: []audit.Kind{audit.KindOrderOverdue, audit.KindWorkflowOverdue},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			undo := tt.break_(t)
			rep, err := audit.Check(ctx, s.deps(), sku)
			undo()
			require.NoError(t, err)
			require.False(t, rep.OK)
			require.ElementsMatch(t, tt.want, uniq(kinds(rep)), "%+v", rep.Violations)
			for _, v := range rep.Violations {
				require.Equal(t, sku, v.SKU)
				require.NotEmpty(t, v.Detail)
			}

			again, err := audit.Check(ctx, s.deps(), sku)
			require.NoError(t, err)
			require.True(t, again.OK, "undone: %+v", again.Violations)
		})
	}

	t.Run("unknown sku", func(t *testing.T) {
		_, err := audit.Check(ctx, s.deps(), "audit-"+s.id+"-nope")
		require.ErrorIs(t, err, &flashsale.Error{Code: flashsale.UnknownSKU})
	})
}

func uniq(ks []audit.Kind) []audit.Kind {
	seen := map[audit.Kind]bool{}
	var out []audit.Kind
	for _, k := range ks {
		if !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	return out
}

// TestReconcileOnARealWorker runs the ReconcileWorkflow as registered by
// backend.Register, on a real worker and Temporal server, where "is the
// order's workflow still running" is answered by Temporal itself, and then
// lets the checker confirm the result.
func TestReconcileOnARealWorker(t *testing.T) {
	ctx := context.Background()
	s := newStack(t)
	tests := []struct {
		name string
		// total and redis are the SKU's units in MySQL and Redis; two
		// orders are placed before the fault.
		total, redis int64
		fault        func(t *testing.T, sku string)
		want         workflows.ReconcileAction
		wantRedis    int64
	}{
		{name: "redis short", total: 10, redis: 10, want: workflows.ActionCorrected, wantRedis: 8, fault: func(t *testing.T, sku string) {
			// Bucket 0 was preheated with 3 units; the orders took at
			// most one of them.
			require.NoError(t, s.rdb.DecrBy(ctx, "fs:{sku:"+sku+":b0}:stock", 2).Err())
		}},
		{name: "redis over", total: 10, redis: 10, want: workflows.ActionCorrected, wantRedis: 8, fault: func(t *testing.T, sku string) {
			require.NoError(t, s.rdb.IncrBy(ctx, "fs:{sku:"+sku+":b2}:stock", 5).Err())
		}},
		{name: "redis lost the sku", total: 10, redis: 10, want: workflows.ActionRestored, wantRedis: 8, fault: func(t *testing.T, sku string) {
			keys, err := s.rdb.Keys(ctx, "fs:{sku:"+sku+"*").Result()
			require.NoError(t, err)
			require.NoError(t, s.rdb.Unlink(ctx, keys...).Err())
		}},
		{
			// The second order got Redis's phantom unit and MySQL refused
			// it. Its unit stays held in Redis by an order whose workflow
			// has ended; the activity must learn that from Temporal and
			// leave it, or it would count it in flight and "correct" a
			// drift that the refusal already healed.
			name: "a StockDrift refusal needs no correction", total: 1, redis: 2,
			want: workflows.ActionInSync, wantRedis: 0,
		},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sku := s.createSKU(t, "rec"+strconv.Itoa(i), tt.total, tt.redis)
			for _, n := range []string{"a", "b"} {
				id := fmt.Sprintf("audit-%s-rec%d-%s", s.id, i, n)
				s.place(t, id, sku, 0)
				if tt.fault == nil && n == "b" {
					s.waitClosed(t, id)
				}
			}
			if tt.fault != nil {
				tt.fault(t, sku)
				before, err := audit.Check(ctx, s.deps(), sku)
				require.NoError(t, err)
				require.False(t, before.OK)
			}

			run, err := s.b.Temporal.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
				ID: workflows.ReconcileWorkflowID(sku), TaskQueue: s.svc.TaskQueue,
			}, workflows.ReconcileWorkflow, workflows.ReconcileInput{SKUs: []string{sku}, Settle: 500 * time.Millisecond})
			require.NoError(t, err)
			var res workflows.ReconcileResult
			require.NoError(t, run.Get(ctx, &res))
			require.Len(t, res.SKUs, 1)
			require.Equal(t, tt.want, res.SKUs[0].Action, "%+v", res.SKUs[0])

			after, err := audit.Check(ctx, s.deps(), sku)
			require.NoError(t, err)
			require.True(t, after.OK, "%+v", after.Violations)
			require.Equal(t, tt.wantRedis, after.SKUs[0].Redis.RedisUnits)
		})
	}
}

// The resync path on a real worker and Temporal server: an order reserved
// in MySQL alone (Redis was down) leaves Redis one unit over and the SKU
// flagged; the checker says both; RequestResync (Signal-With-Start of
// resync-<sku>, what the activities call) re-syncs Redis and clears the
// flag, and the checker is clean again.
func TestResyncOnARealWorker(t *testing.T) {
	ctx := context.Background()
	s := newStack(t)
	sku := s.createSKU(t, "resync", 5, 5)
	_, err := s.b.Orders.CreateOrder(ctx, orderdb.NewOrder{
		Order:    flashsale.Order{OrderID: "audit-" + s.id + "-deg", UserID: "u-deg", Items: []flashsale.Item{{SKU: sku, Quantity: 1}}},
		PayBy:    time.Now().Add(15 * time.Minute),
		Degraded: true,
	})
	require.NoError(t, err)

	before, err := audit.Check(ctx, s.deps(), sku)
	require.NoError(t, err)
	require.Equal(t, []audit.Kind{audit.KindRedisOver}, kinds(before))
	require.Len(t, before.Warnings, 1)
	require.Contains(t, before.Warnings[0], "resync pending")

	require.NoError(t, workflows.RequestResync(ctx, s.b.Temporal, s.b.Config.TaskQueue, sku))
	// A second request while the first runs is a signal, not a second run.
	require.NoError(t, workflows.RequestResync(ctx, s.b.Temporal, s.b.Config.TaskQueue, sku))
	var res workflows.ResyncResult
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	require.NoError(t, s.b.Temporal.GetWorkflow(wctx, workflows.ResyncWorkflowID(sku), "").Get(wctx, &res))
	require.GreaterOrEqual(t, res.Passes, 1)

	after, err := audit.Check(ctx, s.deps(), sku)
	require.NoError(t, err)
	require.Empty(t, after.Violations)
	require.Empty(t, after.Warnings)
	st, err := s.b.Stock.Stock(ctx, sku)
	require.NoError(t, err)
	require.EqualValues(t, 4, st.Available)
}

// A sale through real order workflows on a SKU whose MySQL stock is split
// into bucket rows (as a preheat splits it) checks clean: the checker
// reads the SKU's one truth, its row plus its rows, against Redis and the
// orders. A unit written into a bucket row behind the journal's back is
// found.
func TestCheckBucketRows(t *testing.T) {
	ctx := context.Background()
	s := newStack(t)
	sku := s.createSKU(t, "rows", 12, 12)
	_, err := s.b.Orders.SplitStock(ctx, sku, 4)
	require.NoError(t, err)
	o := func(name string) string { return "audit-" + s.id + "-" + name }
	for i := range 5 {
		require.Equal(t, flashsale.StatusPendingPayment, s.place(t, o(fmt.Sprintf("r%d", i)), sku, 0).Status)
	}
	_, err = s.svc.Pay(ctx, o("r0"), workflows.Payment{TransactionID: "tx-" + o("r0"), Amount: 500})
	require.NoError(t, err)
	_, err = s.svc.Cancel(ctx, o("r1"))
	require.NoError(t, err)
	s.waitClosed(t, o("r0"))
	s.waitClosed(t, o("r1"))
	require.Equal(t, int64(4), s.scalar(t, "SELECT COUNT(DISTINCT bucket) FROM inventory_buckets WHERE sku_id = ?", sku))
	require.Equal(t, int64(5), s.scalar(t, "SELECT COUNT(*) FROM order_items WHERE sku_id = ? AND bucket IS NOT NULL", sku),
		"every line names its bucket row, the cancelled one too")

	rep, err := audit.Check(ctx, s.deps(), sku)
	require.NoError(t, err)
	require.True(t, rep.OK, "a clean sale on bucket rows passes: %+v", rep.Violations)
	require.Len(t, rep.SKUs, 1)
	got := rep.SKUs[0]
	require.Equal(t, [4]int64{12, 8, 3, 1}, [4]int64{got.Total, got.Available, got.Frozen, got.Sold})

	s.rawSQL(t, fmt.Sprintf("UPDATE inventory_buckets SET available = available + 1, total = total + 1 WHERE sku_id = '%s' AND bucket = 0", sku))
	rep, err = audit.Check(ctx, s.deps(), sku)
	require.NoError(t, err)
	require.False(t, rep.OK)
	require.Contains(t, kinds(rep), audit.KindJournalReplay, "%+v", rep.Violations)
}
