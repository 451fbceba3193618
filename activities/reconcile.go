package activities

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/flashsale/flashsale/internal/inventory"
	"github.com/flashsale/flashsale/internal/orderdb"
)

// Reconciler holds the activities of the reconcile workflow, which keeps
// Redis's buckets equal to what MySQL and the open orders say while a sale
// runs, and puts them back after Redis lost them.
//
// # What "in step" means
//
// Redis is allowed to be short of MySQL's available units, never over, and
// only by units that are visibly on their way:
//
//   - an order's Redis take is done but MySQL has not frozen the units yet
//     (ReserveStock done, CreateOrder pending): MySQL still counts them
//     available;
//   - MySQL has released an order's units but Redis has not got them back
//     yet (CloseOrder done, ReleaseStock pending).
//
// Both are orders whose marker in Redis still holds units, whose MySQL row
// is not PENDING_PAYMENT or PAID, and whose workflow is still running: it
// will make the missing move. Those units are "in flight". Held units of an
// order whose workflow has ended are not: nothing will move them again (a
// StockDrift refusal keeps the units out of Redis on purpose). So
//
//	drift = db available - redis units - in-flight units
//
// is zero when Redis is in step, positive when Redis undersells (it lost
// releases or restocks) and negative when Redis offers units MySQL does not
// have (a failover brought taken stock back to life).
//
// # Correcting without racing live reservations
//
// Buyers keep taking and releasing while the reconciler reads and writes,
// and no read spans Redis and MySQL atomically. Five rules keep the
// correction from fighting them:
//
//  1. The correction is relative: adjust.lua INCRBYs or DECRBYs the drift
//     (never below zero), it never SETs a bucket to a total computed from
//     an earlier read. A take or release that lands between our reads and
//     our write keeps its effect; only the drift itself is moved.
//  2. In-flight units are counted explicitly, not guessed, so a busy sale
//     with thousands of orders in motion still shows its true drift.
//  3. The reads run in an order that makes the remaining tearing harmless:
//     buckets first, then the order markers, then Temporal, then MySQL (one
//     snapshot, in which an order's row and its stock move commit
//     together). A take landing in between can only make Redis look over
//     (the unit is in the markers but not missing from the buckets read
//     before), never short, so it can never cause units to be added.
//     Units coming back (release, restock, preheat, restore) bump gen,
//     and a correction moves the fence: if either changed across the
//     observation it is marked torn and retried; a torn observation is
//     never acted on.
//  4. An observation is only acted on if a second one, taken Settle later
//     (longer than a reservation can be in flight), shows exactly the same
//     drift and fence. A transient that the accounting cannot see (a
//     restock between its MySQL and Redis halves, a workflow between a
//     refusal and its end) has gone by then, or the two would differ.
//  5. The correction first claims the fence both observations read
//     (claim.lua), so of two reconcile runs that saw the same drift (the
//     schedule and a manual run) only one corrects. The claim moves the
//     fence, which makes every observation taken before it stale for the
//     other run. The workflow bounds the correction activity's lifetime
//     below Settle, so a later run's two observations either both see it
//     landed or it never will.
//
// A fencing generation that stops the sale while Redis is rewritten would
// be exact too, but it turns buyers away during every run; these rules
// never do.
//
// # Lost buckets
//
// When Redis lost a SKU's bucket count (restart or failover that lost
// writes), Reserve already answers UnknownSKU, so no buyer is admitted and
// no release or restock can move a bucket. RestoreStock re-preheats from
// MySQL's available units with SET NX writes, count last, so it never
// overwrites stock buyers can already take.
type Reconciler struct {
	Stock  *inventory.Store
	Orders *orderdb.Store
	Logger *slog.Logger
	// Temporal answers whether an order's workflow is still running. Nil
	// inside an activity means the worker's own client.
	Temporal client.Client
	// OrderWorkflowID maps an order id to its workflow id. It is
	// workflows.OrderWorkflowID, passed in because workflows imports this
	// package.
	OrderWorkflowID func(orderID string) string
	// OrderRunning, if set, replaces the Temporal lookup. Tests that reserve
	// stock without an order workflow use it to say which orders are in
	// flight.
	OrderRunning func(ctx context.Context, orderID string) (bool, error)
	// ResyncSettle separates ResyncStock's two observations; zero means
	// DefaultResyncSettle.
	ResyncSettle time.Duration
}

// observeAttempts bounds how often ObserveStock rereads a SKU whose stock
// came back while it was reading. A sale where units come back faster than
// that gets reported as torn and is left alone by this run.
const observeAttempts = 3

// ListSKUsInput is empty; it exists so fields can be added.
type ListSKUsInput struct{}

// ListSKUsResult lists every SKU MySQL knows, sorted.
type ListSKUsResult struct {
	SKUs []string `json:"skus"`
}

// ListSKUs lists the SKUs to reconcile when the workflow was given none.
func (r *Reconciler) ListSKUs(ctx context.Context, _ ListSKUsInput) (ListSKUsResult, error) {
	ids, err := r.Orders.SKUIDs(ctx)
	if err != nil {
		return ListSKUsResult{}, err
	}
	return ListSKUsResult{SKUs: ids}, nil
}

// StockObservation compares one SKU's Redis buckets with MySQL.
type StockObservation struct {
	SKU string `json:"sku_id"`
	// UnknownSKU: MySQL has no inventory row; there is nothing to compare.
	UnknownSKU bool `json:"unknown_sku,omitempty"`
	// Missing: Redis has no bucket count for the SKU (lost, or never
	// preheated); buyers are answered UNKNOWN_SKU.
	Missing bool `json:"missing,omitempty"`
	// Torn: stock came back or a reconciler acted while every attempt was
	// reading; the numbers may be off by those units.
	Torn    bool  `json:"torn,omitempty"`
	Fence   int64 `json:"fence"`
	Buckets int   `json:"buckets"`
	// RedisUnits sums the buckets (a negative bucket counts as empty).
	RedisUnits      int64 `json:"redis_units"`
	NegativeBuckets []int `json:"negative_buckets,omitempty"`
	// InFlight is held in Redis by orders whose running workflow has a
	// MySQL or Redis move still to make (see Reconciler).
	InFlight       int64 `json:"in_flight"`
	InFlightOrders int   `json:"in_flight_orders"`
	// Dead is held in Redis by orders MySQL does not count and whose
	// workflow has ended: units kept out of Redis after a StockDrift
	// refusal. Informational; they are neither drift nor in flight.
	Dead        int64 `json:"dead"`
	DBAvailable int64 `json:"db_available"`
	// Drift is DBAvailable - RedisUnits - InFlight: positive when Redis
	// is short (undersell), negative when it offers units MySQL does not
	// have.
	Drift int64 `json:"drift"`
}

// ObserveStockInput names the SKUs to observe.
type ObserveStockInput struct {
	SKUs []string `json:"skus"`
}

// ObserveStockResult has one observation per SKU, in input order.
type ObserveStockResult struct {
	Observations []StockObservation `json:"observations"`
}

// ObserveStock measures each SKU's drift between Redis and MySQL. It writes
// nothing, so retries are free.
func (r *Reconciler) ObserveStock(ctx context.Context, in ObserveStockInput) (ObserveStockResult, error) {
	out := ObserveStockResult{Observations: make([]StockObservation, 0, len(in.SKUs))}
	for _, sku := range in.SKUs {
		obs, err := r.observe(ctx, sku)
		if err != nil {
			if errors.Is(err, inventory.ErrInvalidArgument) {
				return ObserveStockResult{}, temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeInvalid, nil)
			}
			return ObserveStockResult{}, err
		}
		out.Observations = append(out.Observations, obs)
		if activity.IsActivity(ctx) {
			// A scan of a large keyspace takes a while per SKU.
			activity.RecordHeartbeat(ctx, sku)
		}
	}
	return out, nil
}

func (r *Reconciler) observe(ctx context.Context, sku string) (StockObservation, error) {
	var obs StockObservation
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
func (r *Reconciler) observeOnce(ctx context.Context, sku string) (StockObservation, bool, error) {
	obs := StockObservation{SKU: sku}
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
	if errors.Is(err, orderdb.ErrUnknownSKU) {
		obs.UnknownSKU = true
		return obs, true, nil
	}
	if err != nil {
		return obs, false, fmt.Errorf("observe %s: %w", sku, err)
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
	obs.DBAvailable = view.Inventory.Available
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
func countedByMySQL(s orderdb.Status) bool {
	return s == orderdb.StatusPendingPayment || s == orderdb.StatusPaid
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

// RestoreStockInput names a SKU whose buckets Redis lost.
type RestoreStockInput struct {
	SKU string `json:"sku_id"`
}

// RestoreStockResult reports the restore.
type RestoreStockResult struct {
	// Restored is false when the SKU was already back in Redis (another
	// run, or a retry of this one, restored it).
	Restored    bool  `json:"restored"`
	Buckets     int   `json:"buckets"`
	RedisUnits  int64 `json:"redis_units"`
	DBAvailable int64 `json:"db_available"`
}

// RestoreStock re-preheats a SKU whose bucket count Redis lost, from MySQL's
// available units and bucket count (inventory.Store.Restore: write-if-absent,
// count last). Units of orders that had taken from Redis but not yet reached
// MySQL when Redis lost them are counted as available here; MySQL still
// refuses them if they run out, and the next reconcile run sees the drift
// and removes them.
func (r *Reconciler) RestoreStock(ctx context.Context, in RestoreStockInput) (RestoreStockResult, error) {
	inv, err := r.Orders.Inventory(ctx, in.SKU)
	if errors.Is(err, orderdb.ErrUnknownSKU) {
		return RestoreStockResult{}, temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeUnknownSKU, nil)
	}
	if err != nil {
		return RestoreStockResult{}, fmt.Errorf("restore %s: %w", in.SKU, err)
	}
	res, err := r.Stock.Restore(ctx, in.SKU, inv.Available, inv.Buckets)
	if err != nil {
		return RestoreStockResult{}, classifyStockErr(err)
	}
	if res.Restored {
		r.logger(ctx).Warn("restored lost redis stock from mysql",
			"sku_id", in.SKU, "db_available", inv.Available, "buckets", res.Buckets, "redis_units", res.Units)
	}
	return RestoreStockResult{Restored: res.Restored, Buckets: res.Buckets, RedisUnits: res.Units, DBAvailable: inv.Available}, nil
}

// CorrectStockInput is a drift seen identically by two observations.
type CorrectStockInput struct {
	SKU string `json:"sku_id"`
	// Delta is the drift: units to add (positive) or remove (negative).
	Delta int64 `json:"delta"`
	// Fence is the reconcile fence both observations read.
	Fence int64 `json:"fence"`
	// CorrectionID makes the correction idempotent; unique per run and SKU.
	CorrectionID string `json:"correction_id"`
}

// CorrectStockResult reports the correction.
type CorrectStockResult struct {
	// Claimed is false when another correction or a restore moved the
	// fence first; nothing was changed then.
	Claimed bool `json:"claimed"`
	// Applied is what moved: Delta, or less when removing units that
	// buyers took meanwhile.
	Applied int64 `json:"applied"`
}

// CorrectStock claims the observation's fence and moves the buckets by
// Delta, relatively (see Reconciler, rules 1 and 5). Retries are safe: the
// claim and each bucket's move are recorded under CorrectionID.
func (r *Reconciler) CorrectStock(ctx context.Context, in CorrectStockInput) (CorrectStockResult, error) {
	if in.Delta == 0 || in.CorrectionID == "" {
		return CorrectStockResult{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("correct %s: need a non-zero delta and a correction id", in.SKU), ErrTypeInvalid, nil)
	}
	claimed, err := r.Stock.ClaimCorrection(ctx, in.SKU, in.Fence, in.CorrectionID)
	if err != nil {
		return CorrectStockResult{}, classifyStockErr(err)
	}
	if !claimed {
		return CorrectStockResult{}, nil
	}
	applied, err := r.Stock.Adjust(ctx, in.SKU, in.Delta, in.CorrectionID)
	if err != nil {
		return CorrectStockResult{}, classifyStockErr(err)
	}
	r.logger(ctx).Warn("corrected redis stock drift",
		"sku_id", in.SKU, "drift", in.Delta, "applied", applied, "correction_id", in.CorrectionID)
	return CorrectStockResult{Claimed: true, Applied: applied}, nil
}

// classifyStockErr makes errors that retrying cannot fix non-retryable.
func classifyStockErr(err error) error {
	switch {
	case errors.Is(err, inventory.ErrUnknownSKU):
		// The buckets vanished after the observations: the next run
		// restores them instead.
		return temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeUnknownSKU, nil)
	case errors.Is(err, inventory.ErrInvalidArgument):
		return temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeInvalid, nil)
	}
	return err
}

func (r *Reconciler) logger(ctx context.Context) *slog.Logger { return activityLogger(ctx, r.Logger) }
