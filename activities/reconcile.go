package activities

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/activities/contract"
	"github.com/flashsale/flashsale/internal/inventory"
	"github.com/flashsale/flashsale/internal/orderdb"
)

// Reconciler holds the activities of the reconcile workflow, which keeps
// Redis's buckets equal to what MySQL and the open orders say while a sale
// runs, and puts them back after Redis lost them: observe.go measures a
// SKU's drift, correct.go restores lost buckets and moves a confirmed drift,
// resync.go does both for a SKU that ran in MySQL alone.
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
	// workflows.OrderWorkflowID, passed in where the worker is assembled
	// (internal/app.RegisterActivities): the activities need nothing else
	// of the workflows' code.
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

// ListSKUs lists the SKUs to reconcile when the workflow was given none.
func (r *Reconciler) ListSKUs(ctx context.Context, _ contract.ListSKUsInput) (contract.ListSKUsResult, error) {
	ids, err := r.Orders.SKUIDs(ctx)
	if err != nil {
		return contract.ListSKUsResult{}, err
	}
	return contract.ListSKUsResult{SKUs: ids}, nil
}

// classifyStockErr gives the Redis store's refusals that retrying cannot
// fix as business answers.
func classifyStockErr(op string, err error) error {
	switch flashsale.ErrorCode(err) {
	case flashsale.UnknownSKU, flashsale.Invalid:
		// UnknownSKU: the buckets vanished after the observations; the
		// next run restores them instead.
		return refuse(op, err)
	}
	return fmt.Errorf("%s: %w", op, err)
}

func (r *Reconciler) logger(ctx context.Context) *slog.Logger { return activityLogger(ctx, r.Logger) }
