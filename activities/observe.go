package activities

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/activity"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/activities/contract"
)

// ObserveStock measures each SKU's drift between Redis and MySQL. It writes
// nothing, so retries are free.
func (r *Reconciler) ObserveStock(ctx context.Context, in contract.ObserveStockInput) (contract.ObserveStockResult, error) {
	out := contract.ObserveStockResult{Observations: make([]contract.StockObservation, 0, len(in.SKUs))}
	for _, sku := range in.SKUs {
		obs, err := r.observe(ctx, sku)
		if err != nil {
			if flashsale.ErrorCode(err) == flashsale.Invalid {
				return contract.ObserveStockResult{}, refuse("observe "+sku, err)
			}
			return contract.ObserveStockResult{}, err
		}
		out.Observations = append(out.Observations, obs)
		if activity.IsActivity(ctx) {
			// A scan of a large keyspace takes a while per SKU.
			activity.RecordHeartbeat(ctx, sku)
		}
	}
	return out, nil
}

func (r *Reconciler) observe(ctx context.Context, sku string) (contract.StockObservation, error) {
	var obs contract.StockObservation
	for range observeAttempts {
		var settled bool
		var err error
		obs, settled, err = r.observeOnce(ctx, sku)
		if err != nil || settled {
			return obs, err
		}
	}
	obs.Torn = true
	return obs, nil
}

// observeOnce reads, in this order (see Reconciler, rule 3): marks and
// buckets, the order markers, which of the orders MySQL does not count
// still have a running workflow, MySQL in one snapshot, and the marks
// again. It reports whether the marks stayed put.
//
// Temporal is asked before the MySQL snapshot, not after: a workflow seen
// running may still create its order before the snapshot (then MySQL counts
// it) or end after a refusal (then its units are counted in flight,
// erring towards "Redis looks over"). Asked after the snapshot, an order
// created, paid and finished in between would look dead while the snapshot
// still counted its units available, making Redis look short.
func (r *Reconciler) observeOnce(ctx context.Context, sku string) (contract.StockObservation, bool, error) {
	obs := contract.StockObservation{SKU: sku}
	snap, err := r.Stock.Snapshot(ctx, sku)
	if err != nil {
		return obs, false, fmt.Errorf("observe %s: %w", sku, err)
	}
	obs.Missing, obs.Fence, obs.Buckets = snap.Missing, snap.Fence, snap.Buckets
	obs.RedisUnits, obs.NegativeBuckets = snap.Units, snap.NegativeBuckets

	var held map[string]int64
	if !snap.Missing {
		if held, err = r.Stock.HeldByOrder(ctx, sku); err != nil {
			return obs, false, fmt.Errorf("observe %s: %w", sku, err)
		}
	}
	ids := make([]string, 0, len(held))
	for id := range held {
		ids = append(ids, id)
	}
	slices.Sort(ids)

	// Which held orders MySQL does not count yet, and of those, whose
	// workflow still runs.
	pre, err := r.Orders.StockView(ctx, sku, ids)
	if flashsale.ErrorCode(err) == flashsale.UnknownSKU {
		obs.UnknownSKU = true
		return obs, true, nil
	}
	if err != nil {
		return obs, false, fmt.Errorf("observe %s: %w", sku, err)
	}
	if pre.Inventory.SaleEndedAt != nil {
		obs.Ended, obs.DBAvailable = true, pre.Inventory.Available
		obs.Drift, obs.RedisUnits, obs.NegativeBuckets, obs.Missing = 0, 0, nil, false
		return obs, true, nil
	}
	if snap.Missing {
		// Nothing to compare: the whole SKU is gone from Redis.
		obs.DBAvailable = pre.Inventory.Available
		obs.Drift = obs.DBAvailable
		return obs, true, nil
	}
	running := make(map[string]bool)
	for _, id := range ids {
		if countedByMySQL(pre.Statuses[id]) {
			continue
		}
		if running[id], err = r.orderRunning(ctx, id); err != nil {
			return obs, false, fmt.Errorf("observe %s: %w", sku, err)
		}
	}

	view, err := r.Orders.StockView(ctx, sku, ids)
	if err != nil {
		return obs, false, fmt.Errorf("observe %s: %w", sku, err)
	}
	obs.DBAvailable, obs.Total = view.Inventory.Available, view.Inventory.Total
	for _, id := range ids {
		if countedByMySQL(view.Statuses[id]) {
			continue
		}
		run, asked := running[id]
		// Not asked: the order was PENDING_PAYMENT a moment ago and has
		// closed since, so its release is pending (or just done, which
		// bumps gen and tears the observation): in flight.
		if run || !asked {
			obs.InFlight += held[id]
			obs.InFlightOrders++
		} else {
			obs.Dead += held[id]
		}
	}
	obs.Drift = obs.DBAvailable - obs.RedisUnits - obs.InFlight

	after, err := r.Stock.Marks(ctx, sku)
	if err != nil {
		return obs, false, fmt.Errorf("observe %s: %w", sku, err)
	}
	return obs, after == snap.Marks, nil
}

// countedByMySQL says whether MySQL already accounts for an order's units
// outside available (frozen or sold), so Redis holding them is in step.
func countedByMySQL(s flashsale.Status) bool {
	return s == flashsale.StatusPendingPayment || s == flashsale.StatusPaid
}

// orderRunning reports whether the order's workflow is still running, and
// so may still move the order's Redis or MySQL units. Describe, not the
// visibility store: visibility lags, and a missed running order would make
// Redis look short.
func (r *Reconciler) orderRunning(ctx context.Context, orderID string) (bool, error) {
	if r.OrderRunning != nil {
		return r.OrderRunning(ctx, orderID)
	}
	if r.OrderWorkflowID == nil {
		return false, errors.New("reconciler has no OrderWorkflowID")
	}
	c := r.Temporal
	if c == nil {
		if !activity.IsActivity(ctx) {
			return false, errors.New("reconciler has no Temporal client outside an activity")
		}
		c = activity.GetClient(ctx)
	}
	desc, err := c.DescribeWorkflow(ctx, r.OrderWorkflowID(orderID), "")
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return false, nil // never started, or gone past retention
	}
	if err != nil {
		return false, fmt.Errorf("describe workflow of order %s: %w", orderID, err)
	}
	return desc.Status == enums.WORKFLOW_EXECUTION_STATUS_RUNNING, nil
}
