//go:build integration

package bench

import (
	"context"
	"database/sql"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/flashsale/flashsale"
	_ "github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/worker"

	"github.com/flashsale/flashsale/internal/app"
	"github.com/flashsale/flashsale/internal/app/apptest"
	"github.com/flashsale/flashsale/internal/backend"
	"github.com/flashsale/flashsale/internal/inventory"
	"github.com/flashsale/flashsale/internal/orders"
	"github.com/flashsale/flashsale/internal/testenv"
	"github.com/flashsale/flashsale/lab/ceiling"
)

// The scenarios run briefly against the real services, checking that each
// measures what it claims (the stock it moved), not how fast.

func TestRedisScenariosMoveStock(t *testing.T) {
	ctx := context.Background()
	stock := inventory.New(testenv.Redis(t), inventory.Options{})
	run := testenv.UniqueID(t)
	for _, buckets := range []int{1, 16} {
		s, err := RedisReserve(ctx, stock, run, buckets, 200, 8)
		require.NoError(t, err)
		require.Equal(t, Stat{Name: s.Name, Ops: 200}, Stat{Name: s.Name, Ops: s.Ops, Errors: s.Errors})
		st, err := stock.Stock(ctx, "bench-redis-"+run+"-"+map[int]string{1: "1", 16: "16"}[buckets])
		require.NoError(t, err)
		require.Equal(t, int64(200+buckets), st.Available, "2n+buckets preheated, n taken")
	}
	s, err := RedisRawTake(ctx, stock, run, 200, 8)
	require.NoError(t, err)
	require.Zero(t, s.Errors, s.FirstError)
	st, err := stock.Stock(ctx, "bench-raw-"+run)
	require.NoError(t, err)
	require.Equal(t, int64(200), st.Available)
}

func TestMySQLHotRowSellsExactly(t *testing.T) {
	ctx := context.Background()
	db, err := sql.Open("mysql", testenv.MySQLDSN(t))
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	run := testenv.UniqueID(t)
	s, err := MySQLHotRow(ctx, db, run, 300, 16)
	require.NoError(t, err)
	require.Zero(t, s.Errors, s.FirstError)
	var sold, available int64
	require.NoError(t, db.QueryRow(`SELECT sold, available FROM bench_hot_row WHERE sku_id = ?`, "hot-"+run).Scan(&sold, &available))
	require.Equal(t, int64(300), sold)
	require.Equal(t, int64(300), available)
}

func TestOrdersAndCeilingOnTemporal(t *testing.T) {
	ctx := context.Background()
	sys := apptest.Start(t, apptest.Options{Name: "bench-test", WorkerConcurrency: 64,
		Logger:   slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})),
		Register: func(r worker.Registry, b *backend.Backend) { ceiling.Register(r, app.Activities(b)) }})
	cfg, be := sys.Config, sys.Backend

	sku := "bench-orders-" + testenv.UniqueID(t)
	_, err := be.Orders.PutSKU(ctx, flashsale.SKU{ID: sku, Total: 100, Price: 250, Buckets: 4, PerUserLimit: 1})
	require.NoError(t, err)
	_, err = be.Stock.Preheat(ctx, sku, 100, 4)
	require.NoError(t, err)

	svc := &orders.Service{Temporal: be.Temporal, TaskQueue: cfg.TaskQueue, Orders: be.Orders}
	reserve, whole := Orders(ctx, svc, sku, 250, "r", 20, 4)
	require.Zero(t, whole.Errors, whole.FirstError)
	require.Equal(t, int64(20), whole.Ops)
	require.Equal(t, int64(20), reserve.Ops)
	require.LessOrEqual(t, reserve.P50ms, whole.P50ms, "the answer comes before the payment")
	inv, err := be.Orders.Inventory(ctx, sku)
	require.NoError(t, err)
	require.Equal(t, int64(20), inv.Sold)

	c := Ceiling(ctx, be.Temporal, cfg.TaskQueue, testenv.UniqueID(t), 20, 4)
	require.Zero(t, c.Errors, c.FirstError)
	require.Equal(t, int64(20), c.Ops)

	// C1 does no work; C2 does the order's: 10 more units sold and paid.
	c1 := Shape(ctx, be.Temporal, cfg.TaskQueue, sku, testenv.UniqueID(t), false, 250, 10, 4)
	require.Zero(t, c1.Errors, c1.FirstError)
	require.Equal(t, int64(10), c1.Ops)
	inv, err = be.Orders.Inventory(ctx, sku)
	require.NoError(t, err)
	require.Equal(t, int64(20), inv.Sold, "C1 sells nothing")
	c2 := Shape(ctx, be.Temporal, cfg.TaskQueue, sku, testenv.UniqueID(t), true, 250, 10, 4)
	require.Zero(t, c2.Errors, c2.FirstError)
	require.Equal(t, int64(10), c2.Ops)
	inv, err = be.Orders.Inventory(ctx, sku)
	require.NoError(t, err)
	require.Equal(t, int64(30), inv.Sold, "C2 reserves, creates and pays as an order does")
	require.Equal(t, int64(70), inv.Available)
	// Every rung from C0 to C1 runs to its end.
	for _, rung := range ceiling.Rungs {
		r := Shape(ctx, be.Temporal, cfg.TaskQueue, sku, testenv.UniqueID(t), false, 250, 4, 2, rung)
		require.Zero(t, r.Errors, "%s: %s", rung.Name, r.FirstError)
		require.Equal(t, int64(4), r.Ops, rung.Name)
	}

	// Each path's cost is read once its workflow has closed; the exact
	// counts belong to the workflow (and change with it), so this checks
	// that every path ended as named and that the counts were read.
	soldOut := "bench-rejected-" + testenv.UniqueID(t)
	_, err = be.Orders.PutSKU(ctx, flashsale.SKU{ID: soldOut, Total: 0, Price: 250, Buckets: 4, PerUserLimit: 1})
	require.NoError(t, err)
	_, err = be.Stock.Preheat(ctx, soldOut, 0, 4)
	require.NoError(t, err)
	paths, err := OrderPaths(ctx, svc, PathsOptions{Server: "test", SKU: sku, SoldOutSKU: soldOut, Amount: 250,
		Run: testenv.UniqueID(t), PerPath: 2, ExpireAfter: 2 * time.Second, Queue: cfg.TaskQueue})
	require.NoError(t, err)
	status := map[string]string{}
	for _, p := range paths {
		status[p.Path] = p.Status
		require.Equal(t, 2, p.Workflows, p.Path)
		require.Positive(t, p.TransitionsMin, p.Path)
		require.Positive(t, p.EventsMin, p.Path)
		require.LessOrEqual(t, p.TransitionsMin, p.Transitions)
		require.LessOrEqual(t, p.Transitions, p.TransitionsMax)
	}
	require.Equal(t, map[string]string{PathPaid: "PAID", PathExpired: "EXPIRED", PathCancelled: "CANCELLED",
		PathRejected: "REJECTED", PathCeiling: "Completed"}, status)
}
