//go:build integration

package activities_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/activities"
	"github.com/flashsale/flashsale/activities/contract"
	"github.com/flashsale/flashsale/internal/inventory"
	"github.com/flashsale/flashsale/internal/orderdb"
	"github.com/flashsale/flashsale/internal/testenv"
	"github.com/flashsale/flashsale/workflows"
)

// These tests run the reconciliation activities against the real Redis and
// MariaDB. Orders are placed by calling the stores directly, the way the
// order workflow's activities do, so that a test can stop an order between
// its Redis and MySQL steps; the fixture's running set then stands in for
// "the order's workflow is still running".

type reconcileFixture struct {
	stock  *inventory.Store
	orders *orderdb.Store
	rdb    *redis.Client
	rec    *activities.Reconciler
	prefix string
	// running holds the orders whose simulated workflow still has a Redis
	// or MySQL step to make.
	running sync.Map
}

func newReconcileFixture(t *testing.T) *reconcileFixture {
	t.Helper()
	ctx := context.Background()
	orders, err := orderdb.Open(ctx, testenv.MySQLDSN(t))
	require.NoError(t, err)
	t.Cleanup(func() { _ = orders.Close() })
	rdb := testenv.Redis(t)
	f := &reconcileFixture{
		stock: inventory.New(rdb, inventory.Options{}), orders: orders, rdb: rdb,
		prefix: "rec-" + testenv.UniqueID(t) + "-",
	}
	f.rec = &activities.Reconciler{
		Stock: f.stock, Orders: orders, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		OrderRunning: func(_ context.Context, orderID string) (bool, error) {
			_, ok := f.running.Load(orderID)
			return ok, nil
		},
		ResyncSettle: 20 * time.Millisecond,
	}
	t.Cleanup(func() { f.deleteKeys(t, f.prefix) })
	return f
}

// deleteKeys removes every Redis key of SKUs whose id starts with prefix,
// in one UNLINK so that, like a restart that lost data, buyers see the
// keys either all there or all gone. The prefix is unique to the test, so
// no other test's keys go: the Redis is shared and is never flushed.
func (f *reconcileFixture) deleteKeys(t *testing.T, prefix string) {
	ctx := context.Background()
	keys, err := f.rdb.Keys(ctx, "fs:{sku:"+prefix+"*").Result()
	if err != nil {
		t.Logf("cleanup: %v", err)
		return
	}
	if len(keys) > 0 {
		if err := f.rdb.Unlink(ctx, keys...).Err(); err != nil {
			t.Logf("cleanup: %v", err)
		}
	}
}

// sku creates a SKU with dbStock units in MySQL and redisStock in Redis.
func (f *reconcileFixture) sku(t *testing.T, name string, dbStock, redisStock int64) string {
	t.Helper()
	id := f.prefix + name
	_, err := f.orders.PutSKU(context.Background(), flashsale.SKU{ID: id, Total: dbStock, Price: 100, Buckets: 4, PerUserLimit: 1})
	require.NoError(t, err)
	_, err = f.stock.Preheat(context.Background(), id, redisStock, 4)
	require.NoError(t, err)
	return id
}

func (f *reconcileFixture) create(ctx context.Context, orderID, sku string) error {
	_, err := f.orders.CreateOrder(ctx, orderdb.NewOrder{
		Order: flashsale.Order{OrderID: orderID, UserID: "u-" + orderID, Items: []flashsale.Item{{SKU: sku, Quantity: 1}}},
		PayBy: time.Now().Add(15 * time.Minute),
	})
	return err
}

func (f *reconcileFixture) observe(t *testing.T, sku string) contract.StockObservation {
	t.Helper()
	res, err := f.rec.ObserveStock(context.Background(), contract.ObserveStockInput{SKUs: []string{sku}})
	require.NoError(t, err)
	require.Len(t, res.Observations, 1)
	return res.Observations[0]
}

// reconcile runs the real ReconcileWorkflow once, in the SDK's test
// environment, on the real stores. The environment skips the settle timer,
// so the two observations are taken back to back: the harshest case, where
// only the in-flight accounting and the read order keep corrections right.
func (f *reconcileFixture) reconcile(sku string) (workflows.ReconcileResult, error) {
	var ts testsuite.WorkflowTestSuite
	ts.SetLogger(tlog.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	env := ts.NewTestWorkflowEnvironment()
	// The activities run against the real stores; on two shared cores
	// under a parallel test run they can take longer than the test
	// environment's default 3 s wall-clock budget.
	env.SetTestTimeout(time.Minute)
	env.RegisterWorkflow(workflows.ReconcileWorkflow)
	env.RegisterActivity(f.rec)
	// These runs are about correcting under buyers: no gate in the way
	// (workflows/gate.go is tested on its own).
	env.ExecuteWorkflow(workflows.ReconcileWorkflow, workflows.ReconcileInput{SKUs: []string{sku}, Settle: time.Second,
		MaxCorrect: math.MaxInt64})
	if !env.IsWorkflowCompleted() {
		return workflows.ReconcileResult{}, errors.New("reconcile workflow did not complete")
	}
	if err := env.GetWorkflowError(); err != nil {
		return workflows.ReconcileResult{}, err
	}
	var res workflows.ReconcileResult
	return res, env.GetWorkflowResult(&res)
}

func TestObserveStockSeparatesDriftFromUnitsInFlight(t *testing.T) {
	ctx := context.Background()
	f := newReconcileFixture(t)
	tests := []struct {
		name         string
		db, redis    int64
		setup        func(t *testing.T, sku string)
		want         contract.StockObservation // SKU filled in below
		wantDeadOnly bool
	}{
		{name: "in step", db: 10, redis: 10, want: contract.StockObservation{RedisUnits: 10, DBAvailable: 10}},
		{name: "redis short", db: 10, redis: 7, want: contract.StockObservation{RedisUnits: 7, DBAvailable: 10, Drift: 3}},
		{name: "redis over", db: 10, redis: 12, want: contract.StockObservation{RedisUnits: 12, DBAvailable: 10, Drift: -2}},
		{
			name: "take not yet in mysql, workflow running: in flight", db: 10, redis: 10,
			setup: func(t *testing.T, sku string) {
				f.running.Store(sku+"-o", true)
				_, err := f.stock.Reserve(ctx, sku+"-o", sku, 1)
				require.NoError(t, err)
			},
			want: contract.StockObservation{RedisUnits: 9, DBAvailable: 10, InFlight: 1, InFlightOrders: 1},
		},
		{
			name: "take whose workflow ended without mysql or release: leaked, redis short", db: 10, redis: 10,
			setup: func(t *testing.T, sku string) {
				_, err := f.stock.Reserve(ctx, sku+"-o", sku, 1)
				require.NoError(t, err)
			},
			want: contract.StockObservation{RedisUnits: 9, DBAvailable: 10, Dead: 1, Drift: 1},
		},
		{
			name: "order created: mysql counts it", db: 10, redis: 10,
			setup: func(t *testing.T, sku string) {
				_, err := f.stock.Reserve(ctx, sku+"-o", sku, 1)
				require.NoError(t, err)
				require.NoError(t, f.create(ctx, sku+"-o", sku))
			},
			want: contract.StockObservation{RedisUnits: 9, DBAvailable: 9},
		},
		{
			name: "closed in mysql, release still to come: in flight", db: 10, redis: 10,
			setup: func(t *testing.T, sku string) {
				f.running.Store(sku+"-o", true)
				_, err := f.stock.Reserve(ctx, sku+"-o", sku, 1)
				require.NoError(t, err)
				require.NoError(t, f.create(ctx, sku+"-o", sku))
				_, err = f.orders.CloseOrder(ctx, sku+"-o", flashsale.StatusExpired, "test")
				require.NoError(t, err)
			},
			want: contract.StockObservation{RedisUnits: 9, DBAvailable: 10, InFlight: 1, InFlightOrders: 1},
		},
		{
			name: "units kept out after a StockDrift refusal: healed, not drift", db: 1, redis: 2,
			setup: func(t *testing.T, sku string) {
				for _, o := range []string{sku + "-a", sku + "-b"} {
					_, err := f.stock.Reserve(ctx, o, sku, 1)
					require.NoError(t, err)
				}
				require.NoError(t, f.create(ctx, sku+"-a", sku))
				require.Equal(t, flashsale.StockDrift, flashsale.ErrorCode(f.create(ctx, sku+"-b", sku)))
			},
			want: contract.StockObservation{RedisUnits: 0, DBAvailable: 0, Dead: 1},
		},
		{
			name: "redis lost the sku", db: 10, redis: 10,
			setup: func(t *testing.T, sku string) { f.deleteKeys(t, sku) },
			want:  contract.StockObservation{Missing: true, DBAvailable: 10, Drift: 10},
		},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sku := f.sku(t, fmt.Sprintf("obs%d", i), tt.db, tt.redis)
			if tt.setup != nil {
				tt.setup(t, sku)
			}
			got := f.observe(t, sku)
			tt.want.SKU = sku
			tt.want.Fence, tt.want.Buckets = got.Fence, got.Buckets
			if !got.Missing {
				tt.want.Total = tt.db
			}
			require.Equal(t, tt.want, got)
		})
	}

	t.Run("sku unknown to mysql", func(t *testing.T) {
		got := f.observe(t, f.prefix+"nope")
		require.True(t, got.UnknownSKU)
	})
}

func TestCorrectStockClaimsTheObservationOnce(t *testing.T) {
	ctx := context.Background()
	f := newReconcileFixture(t)
	sku := f.sku(t, "fix", 10, 6)
	obs := f.observe(t, sku)
	require.Equal(t, int64(4), obs.Drift)

	in := contract.CorrectStockInput{SKU: sku, Delta: obs.Drift, Fence: obs.Fence, CorrectionID: "run-1:" + sku}
	res, err := f.rec.CorrectStock(ctx, in)
	require.NoError(t, err)
	require.Equal(t, contract.CorrectStockResult{Claimed: true, Applied: 4}, res)

	// A retry of the same activity replays; it moves nothing.
	res, err = f.rec.CorrectStock(ctx, in)
	require.NoError(t, err)
	require.Equal(t, contract.CorrectStockResult{Claimed: true, Applied: 4}, res)

	// Another run that saw the same drift at the same fence loses.
	other := in
	other.CorrectionID = "run-2:" + sku
	res, err = f.rec.CorrectStock(ctx, other)
	require.NoError(t, err)
	require.False(t, res.Claimed)

	after := f.observe(t, sku)
	require.Zero(t, after.Drift)
	require.Equal(t, int64(10), after.RedisUnits)
}

func TestReconcileWorkflowRepairsRedis(t *testing.T) {
	ctx := context.Background()
	f := newReconcileFixture(t)
	tests := []struct {
		name       string
		db, redis  int64
		lose       bool
		wantAction workflows.ReconcileAction
	}{
		{name: "in step", db: 20, redis: 20, wantAction: workflows.ActionInSync},
		{name: "redis short", db: 20, redis: 13, wantAction: workflows.ActionCorrected},
		{name: "redis over", db: 20, redis: 26, wantAction: workflows.ActionCorrected},
		{name: "redis lost the sku's keys", db: 20, redis: 20, lose: true, wantAction: workflows.ActionRestored},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sku := f.sku(t, fmt.Sprintf("wf%d", i), tt.db, tt.redis)
			// A paid order and an open one, so MySQL's available is not
			// simply the total.
			for _, o := range []string{sku + "-paid", sku + "-open"} {
				_, err := f.stock.Reserve(ctx, o, sku, 1)
				require.NoError(t, err)
				require.NoError(t, f.create(ctx, o, sku))
			}
			_, err := f.orders.ConfirmPayment(ctx, sku+"-paid", "tx-"+sku, 100)
			require.NoError(t, err)
			if tt.lose {
				f.deleteKeys(t, sku)
				_, err := f.stock.Reserve(ctx, sku+"-late", sku, 1)
				require.Equal(t, flashsale.UnknownSKU, flashsale.ErrorCode(err), "no buyer is admitted while the buckets are gone")
			}

			res, err := f.reconcile(sku)
			require.NoError(t, err)
			require.Len(t, res.SKUs, 1)
			require.Equal(t, tt.wantAction, res.SKUs[0].Action, "%+v", res.SKUs[0])

			after := f.observe(t, sku)
			require.False(t, after.Missing)
			require.Zero(t, after.Drift)
			require.Equal(t, tt.db-2, after.RedisUnits, "redis holds exactly mysql's available units")

			again, err := f.reconcile(sku)
			require.NoError(t, err)
			require.Equal(t, workflows.ActionInSync, again.SKUs[0].Action)
		})
	}
}

// TestReconcileDuringConcurrentBuyers runs buyers and reconciliations at
// the same time and then checks the exact unit counts: every unit MySQL had
// is sold (no undersell), Redis ends equal to MySQL, and the only orders
// MySQL refused are those the injected over-drift (or the units Redis lost
// mid-reservation) let through: a correction never makes Redis offer a unit
// MySQL does not have.
func TestReconcileDuringConcurrentBuyers(t *testing.T) {
	const total = 120
	tests := []struct {
		name  string
		redis int64 // preheated into Redis; MySQL has total
		// loseAt deletes every Redis key of the SKU once this many orders
		// succeeded (a restart that lost data), 0 never.
		loseAt int64
		// maxRefused bounds the orders MySQL may refuse: the phantom units
		// of an over-drift, or takes in flight when the keys were lost.
		maxRefused int64
	}{
		{name: "redis short", redis: total - 40, maxRefused: 0},
		{name: "redis over", redis: total + 30, maxRefused: 30},
		{name: "redis loses the sku mid-sale", redis: total, loseAt: 40, maxRefused: buyers},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newReconcileFixture(t)
			sku := f.sku(t, fmt.Sprintf("sale%d", i), total, tt.redis)
			s := &sale{f: f, sku: sku, maxCancels: 10}
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()

			buyCtx, stopBuyers := context.WithCancel(ctx)
			var buyersDone sync.WaitGroup
			errs := make(chan error, buyers+1)
			for range buyers {
				buyersDone.Add(1)
				go func() {
					defer buyersDone.Done()
					if err := s.buyUntil(buyCtx, ctx); err != nil {
						errs <- err
					}
				}()
			}

			// Reconcile over and over while they buy.
			recCtx, stopReconciling := context.WithCancel(ctx)
			var applied atomic.Int64
			var restored atomic.Bool
			var recDone sync.WaitGroup
			recDone.Add(1)
			go func() {
				defer recDone.Done()
				for recCtx.Err() == nil {
					res, err := f.reconcile(sku)
					if err != nil {
						errs <- fmt.Errorf("reconcile: %w", err)
						return
					}
					for _, r := range res.SKUs {
						applied.Add(r.Applied)
						if r.Action == workflows.ActionRestored {
							restored.Store(true)
						}
					}
					time.Sleep(20 * time.Millisecond)
				}
			}()

			// Wait, on this goroutine, until MySQL is sold out after the last
			// cancellation: then no unit can come back and the sale is over.
			lost := false
			deadline := time.Now().Add(80 * time.Second)
			for {
				select {
				case err := <-errs:
					require.NoError(t, err)
				default:
				}
				if tt.loseAt > 0 && !lost && s.succeeded.Load() >= tt.loseAt {
					f.deleteKeys(t, sku)
					lost = true
				}
				inv, err := f.orders.Inventory(ctx, sku)
				require.NoError(t, err)
				if inv.Available == 0 && s.cancelled.Load() == int64(s.maxCancels) {
					break
				}
				require.True(t, time.Now().Before(deadline), "every unit is eventually sold; now %+v, %d cancelled", inv, s.cancelled.Load())
				time.Sleep(20 * time.Millisecond)
			}
			stopBuyers()
			buyersDone.Wait()
			stopReconciling()
			recDone.Wait()
			close(errs)
			for err := range errs {
				require.NoError(t, err)
			}

			// Quiet now: the next runs must leave Redis exactly in step.
			var final workflows.ReconcileResult
			for range 5 {
				res, err := f.reconcile(sku)
				require.NoError(t, err)
				applied.Add(res.SKUs[0].Applied)
				final = res
				if res.SKUs[0].Action == workflows.ActionInSync {
					break
				}
			}
			require.Equal(t, workflows.ActionInSync, final.SKUs[0].Action, "%+v", final.SKUs[0])

			inv, err := f.orders.Inventory(ctx, sku)
			require.NoError(t, err)
			obs := f.observe(t, sku)
			succeeded, cancelled, refused := s.succeeded.Load(), s.cancelled.Load(), s.refused.Load()
			t.Logf("orders: %d succeeded, %d cancelled, %d refused by mysql; reconciler applied %+d",
				succeeded, cancelled, refused, applied.Load())

			require.Equal(t, orderdb.Inventory{SKU: sku, Total: total, Frozen: total, Price: 100, Buckets: 4, PerUserLimit: 1}, inv,
				"mysql sold every unit, none twice")
			require.Equal(t, int64(total), succeeded-cancelled, "open orders hold exactly the stock")
			require.Equal(t, int64(0), obs.RedisUnits, "redis offers nothing mysql does not have")
			require.Zero(t, obs.InFlight)
			require.LessOrEqual(t, refused, tt.maxRefused, "a correction let redis offer units mysql did not have")
			if tt.loseAt == 0 {
				// Every Redis unit is accounted for: preheated + corrections
				// = held by open orders + kept out after refusals + left.
				require.Equal(t, tt.redis+applied.Load(), succeeded-cancelled+refused+obs.RedisUnits)
			} else {
				require.True(t, restored.Load(), "the lost sku was restored")
			}
		})
	}
}

// buyers is how many goroutines buy at once.
const buyers = 8

// sale simulates the order workflow's steps against the real stores:
// ReserveStock, CreateOrder, and for some orders a cancellation (CloseOrder,
// then ReleaseStock retried until Redis has the SKU again).
type sale struct {
	f          *reconcileFixture
	sku        string
	maxCancels int
	seq        atomic.Int64

	succeeded, cancelled, refused atomic.Int64
	cancelTickets                 atomic.Int64
}

// buyUntil places orders until stop is done. An order already started is
// finished on ctx, as its workflow would finish it: abandoning it between
// steps would leak its units and spoil the exact counts.
func (s *sale) buyUntil(stop, ctx context.Context) error {
	for stop.Err() == nil {
		err := s.buy(ctx, fmt.Sprintf("%s-%d", s.sku, s.seq.Add(1)))
		switch {
		case err == nil:
		case flashsale.ErrorCode(err) == flashsale.SoldOut, flashsale.ErrorCode(err) == flashsale.UnknownSKU:
			// Redis says no (for now): try again shortly, as buyers do.
			time.Sleep(5 * time.Millisecond)
		default:
			return err
		}
	}
	return nil
}

func (s *sale) buy(ctx context.Context, orderID string) error {
	// The order's workflow runs from before its first Redis step until
	// after its last one.
	s.f.running.Store(orderID, true)
	defer s.f.running.Delete(orderID)

	if _, err := s.f.stock.Reserve(ctx, orderID, s.sku, 1); err != nil {
		return err
	}
	if err := s.f.create(ctx, orderID, s.sku); err != nil {
		if flashsale.ErrorCode(err) != flashsale.StockDrift {
			return err
		}
		// StockDrift: the unit stays out of Redis, as the workflow does.
		s.refused.Add(1)
		return s.f.stock.RecordDrift(ctx, s.sku, orderID, 1)
	}
	// Every fourth order is cancelled, up to maxCancels, so units come
	// back (and go to other buyers) while the reconciler runs.
	if s.succeeded.Add(1)%4 != 0 || s.cancelTickets.Add(1) > int64(s.maxCancels) {
		return nil
	}
	if _, err := s.f.orders.CloseOrder(ctx, orderID, flashsale.StatusCancelled, "test"); err != nil {
		return err
	}
	for {
		_, err := s.f.stock.Release(ctx, orderID, s.sku)
		if err == nil {
			break
		}
		if flashsale.ErrorCode(err) != flashsale.UnknownSKU {
			return err
		}
		// Lost with the SKU's keys: the activity retries until a restore.
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
	s.cancelled.Add(1)
	return nil
}
