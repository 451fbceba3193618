package workflows

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/workflow"

	"github.com/flashsale/flashsale/activities/contract"
)

// ReconcileWorkflowID is the id of a reconcile run over one SKU
// ("reconcile-<sku>") or every SKU (sku == "": "reconcile-all"). A Schedule
// appends the run's time to it; a manual run uses it as is, so a second
// manual run of the same scope attaches to the first instead of racing it.
func ReconcileWorkflowID(sku string) string {
	if sku == "" {
		return "reconcile-all"
	}
	return "reconcile-" + sku
}

// ReconcileScheduleID is the id of the Temporal Schedule that starts
// reconcile runs of the same scope.
func ReconcileScheduleID(sku string) string { return ReconcileWorkflowID(sku) }

// DefaultReconcileSettle separates the two observations a correction needs.
// It is longer than a reservation can be in flight: the reserve step runs
// ReserveStock and CreateOrder as local activities bounded by 30 s each, so
// a Redis take not yet matched in MySQL is resolved (created, refused or
// given back) within about a minute, whatever the accounting of in-flight
// units missed.
const DefaultReconcileSettle = 65 * time.Second

// Bounds on how long a correction may keep retrying. It must stay below
// the settle time (see Reconciler, rule 5), so the workflow uses half the
// settle time within these bounds. Below 2 s of settle (tests) the floor
// wins: an activity needs a moment to run at all.
const (
	maxCorrectBudget = 30 * time.Second
	minCorrectBudget = time.Second
)

// ReconcileInput starts a ReconcileWorkflow.
type ReconcileInput struct {
	// SKUs to reconcile; empty means every SKU MySQL knows.
	SKUs []string `json:"skus,omitempty"`
	// Settle is the wait between the two observations; zero means
	// DefaultReconcileSettle.
	Settle time.Duration `json:"settle,omitempty"`
	// DryRun observes and reports but changes nothing.
	DryRun bool `json:"dry_run,omitempty"`
	// OverdueGrace is how long past pay_by the net leaves an unpaid order
	// to its workflow; zero means DefaultOverdueGrace.
	OverdueGrace time.Duration `json:"overdue_grace,omitempty"`
	// MaxCorrect and MaxCorrectPercent bound the drift a run corrects by
	// itself: max(MaxCorrect, MaxCorrectPercent% of the SKU's total);
	// zero means DefaultMaxCorrect and DefaultMaxCorrectPercent. A larger
	// drift is held for a person (gate.go).
	MaxCorrect        int64   `json:"max_correct,omitempty"`
	MaxCorrectPercent float64 `json:"max_correct_percent,omitempty"`
}

// ReconcileAction is what a run did with one SKU.
type ReconcileAction string

const (
	// ActionInSync: Redis matched MySQL and the open orders.
	ActionInSync ReconcileAction = "IN_SYNC"
	// ActionRestored: Redis had lost the SKU's buckets; they were
	// re-preheated from MySQL.
	ActionRestored ReconcileAction = "RESTORED"
	// ActionCorrected: the same drift was seen twice and Redis was moved
	// by it.
	ActionCorrected ReconcileAction = "CORRECTED"
	// ActionUnstable: the drift changed between the two observations; it
	// is left for a later run.
	ActionUnstable ReconcileAction = "UNSTABLE"
	// ActionBusy: stock kept coming back while the SKU was being read; no
	// observation could be trusted.
	ActionBusy ReconcileAction = "BUSY"
	// ActionSuperseded: another run corrected or restored the SKU first.
	ActionSuperseded ReconcileAction = "SUPERSEDED"
	// ActionWouldCorrect and ActionWouldRestore: dry run.
	ActionWouldCorrect ReconcileAction = "WOULD_CORRECT"
	ActionWouldRestore ReconcileAction = "WOULD_RESTORE"
	// ActionUnknownSKU: MySQL has no such SKU.
	ActionUnknownSKU ReconcileAction = "UNKNOWN_SKU"
	// ActionFailed: the restore or correction failed; Error says why.
	ActionFailed ReconcileAction = "FAILED"
)

// SKUReconcile is the outcome for one SKU.
type SKUReconcile struct {
	SKU    string          `json:"sku_id"`
	Action ReconcileAction `json:"action"`
	// First and Second are the two observations (Second only when the
	// first showed a drift worth confirming).
	First  contract.StockObservation  `json:"first"`
	Second *contract.StockObservation `json:"second,omitempty"`
	// Restore is set when the SKU's buckets were restored.
	Restore *contract.RestoreStockResult `json:"restore,omitempty"`
	// Applied is the units a correction moved (negative: removed).
	Applied int64 `json:"applied,omitempty"`
	// HoldID is the hold of a drift larger than the run corrects by
	// itself (HELD, or CORRECTED once approved).
	HoldID int64  `json:"hold_id,omitempty"`
	Error  string `json:"error,omitempty"`
}

// ReconcileResult is what a run did.
type ReconcileResult struct {
	Settle time.Duration  `json:"settle"`
	DryRun bool           `json:"dry_run,omitempty"`
	SKUs   []SKUReconcile `json:"skus"`
	// Net is what the net did with orders past their deadline (nil in
	// runs from before it).
	Net *NetReport `json:"net,omitempty"`
}

// ReconcileWorkflow compares Redis with MySQL for each SKU and corrects
// Redis without racing the buyers (see activities.Reconciler for why it
// cannot):
//
//  0. The net (net.go): close the unpaid orders past their deadline whose
//     workflow is gone, and report those whose workflow is stuck.
//  1. Observe every SKU. A SKU whose buckets Redis lost is restored at once:
//     buyers are turned away as UNKNOWN_SKU until it is, and nothing else
//     can move its buckets meanwhile, so there is nothing to wait for.
//  2. For SKUs that showed a drift, wait Settle (a durable timer) and
//     observe them again.
//  3. Correct, relatively, only where both observations agree exactly on
//     the drift and the fence, and only up to the gate's limit (gate.go);
//     a larger drift is held for a person. Everything else is reported and
//     left for the next run.
//
// It is meant to run from a Temporal Schedule (starter reconcile schedule)
// with overlap SKIP; a manual run (starter reconcile now) can run beside it
// safely because a correction claims the fence it observed.
func ReconcileWorkflow(ctx workflow.Context, in ReconcileInput) (ReconcileResult, error) {
	rc := &reconcile{in: in, settle: in.Settle}
	if rc.settle <= 0 {
		rc.settle = DefaultReconcileSettle
	}
	info := workflow.GetInfo(ctx)
	rc.logger = log.With(workflow.GetLogger(ctx), "reconcile", info.WorkflowExecution.ID)
	rc.runID = info.WorkflowExecution.RunID
	return rc.run(ctx)
}

type reconcile struct {
	in     ReconcileInput
	settle time.Duration
	runID  string
	logger log.Logger
}

func (rc *reconcile) run(ctx workflow.Context) (ReconcileResult, error) {
	out := ReconcileResult{Settle: rc.settle, DryRun: rc.in.DryRun}
	// The net first: the units of orders it closes are back in MySQL and
	// Redis before the stock is observed.
	out.Net = rc.net(ctx)
	skus := rc.in.SKUs
	if len(skus) == 0 {
		var list contract.ListSKUsResult
		if err := workflow.ExecuteActivity(rc.readOptions(ctx, "list skus"), contract.ListSKUs,
			contract.ListSKUsInput{}).Get(ctx, &list); err != nil {
			return out, fmt.Errorf("list skus: %w", err)
		}
		skus = list.SKUs
	}
	if len(skus) == 0 {
		return out, nil
	}

	first, err := rc.observe(ctx, skus)
	if err != nil {
		return out, err
	}
	out.SKUs = make([]SKUReconcile, len(first))
	var drifted []int
	for i, obs := range first {
		res := &out.SKUs[i]
		*res = SKUReconcile{SKU: obs.SKU, First: obs}
		switch {
		case obs.UnknownSKU:
			res.Action = ActionUnknownSKU
		case obs.Missing:
			rc.restore(ctx, res)
		case obs.Torn:
			res.Action = ActionBusy
		case obs.Drift == 0:
			res.Action = ActionInSync
		default:
			drifted = append(drifted, i)
		}
	}
	if len(drifted) == 0 {
		return out, nil
	}

	// The durable timer is the "separated by longer than a reservation can
	// be in flight" of rule 4; a worker restart does not shorten it.
	if err := workflow.NewTimerWithOptions(ctx, rc.settle, workflow.TimerOptions{Summary: "let in-flight reservations settle"}).Get(ctx, nil); err != nil {
		return out, fmt.Errorf("settle: %w", err)
	}
	again := make([]string, len(drifted))
	for j, i := range drifted {
		again[j] = skus[i]
	}
	second, err := rc.observe(ctx, again)
	if err != nil {
		return out, err
	}
	for j, i := range drifted {
		res := &out.SKUs[i]
		obs := second[j]
		res.Second = &obs
		switch {
		case obs.Torn:
			res.Action = ActionBusy
		case obs.UnknownSKU, obs.Missing, obs.Drift != res.First.Drift, obs.Fence != res.First.Fence:
			res.Action = ActionUnstable
		case rc.in.DryRun:
			res.Action = ActionWouldCorrect
		default:
			rc.correctOrHold(ctx, res)
		}
	}
	return out, nil
}

func (rc *reconcile) observe(ctx workflow.Context, skus []string) ([]contract.StockObservation, error) {
	var res contract.ObserveStockResult
	if err := workflow.ExecuteActivity(rc.readOptions(ctx, "observe redis and mysql"), contract.ObserveStock,
		contract.ObserveStockInput{SKUs: skus}).Get(ctx, &res); err != nil {
		return nil, fmt.Errorf("observe stock: %w", err)
	}
	if len(res.Observations) != len(skus) {
		return nil, fmt.Errorf("observe stock: %d observations for %d skus", len(res.Observations), len(skus))
	}
	return res.Observations, nil
}

// restore re-preheats a SKU Redis lost. Failure is recorded, not returned:
// the other SKUs still get reconciled and the next run tries again.
func (rc *reconcile) restore(ctx workflow.Context, res *SKUReconcile) {
	if rc.in.DryRun {
		res.Action = ActionWouldRestore
		return
	}
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		// Buyers of this SKU are turned away until it is back, so retry
		// quickly; past the budget the next scheduled run takes over.
		StartToCloseTimeout:    10 * time.Second,
		ScheduleToCloseTimeout: 2 * time.Minute,
		RetryPolicy:            backoff(200*time.Millisecond, 5*time.Second),
		Summary:                "restore " + res.SKU,
	})
	var out contract.RestoreStockResult
	if err := workflow.ExecuteActivity(actx, contract.RestoreStock, contract.RestoreStockInput{SKU: res.SKU}).Get(ctx, &out); err != nil {
		rc.logger.Error("restore failed", "sku_id", res.SKU, "error", err)
		res.Action, res.Error = ActionFailed, err.Error()
		return
	}
	res.Restore = &out
	res.Action = ActionRestored
	if !out.Restored {
		res.Action = ActionSuperseded
	}
}

// correct applies a drift both observations agreed on.
func (rc *reconcile) correct(ctx workflow.Context, res *SKUReconcile, holdID int64) {
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 5 * time.Second,
		// Bounded below the settle time: a later run's two observations
		// must either both see this correction or be sure it never lands
		// (rule 5). The activity context's deadline stops a late attempt.
		ScheduleToCloseTimeout: max(min(rc.settle/2, maxCorrectBudget), minCorrectBudget),
		RetryPolicy:            backoff(100*time.Millisecond, 2*time.Second),
		Summary:                fmt.Sprintf("correct %s by %d", res.SKU, res.First.Drift),
	})
	var out contract.CorrectStockResult
	err := workflow.ExecuteActivity(actx, contract.CorrectStock, contract.CorrectStockInput{
		SKU: res.SKU, Delta: res.First.Drift, Fence: res.First.Fence,
		// Unique per run, SKU and observed fence: a replayed id replays
		// the earlier correction instead of applying this one.
		CorrectionID: fmt.Sprintf("%s:%s:%d", rc.runID, res.SKU, res.First.Fence),
		HoldID:       holdID,
	}).Get(ctx, &out)
	if err != nil {
		rc.logger.Error("correction failed", "sku_id", res.SKU, "error", err)
		res.Action, res.Error = ActionFailed, err.Error()
		return
	}
	if !out.Claimed {
		res.Action = ActionSuperseded
		return
	}
	res.Action, res.Applied = ActionCorrected, out.Applied
	rc.logger.Info("corrected drift", "sku_id", res.SKU, "drift", res.First.Drift, "applied", out.Applied)
}

// reconcileReadAttempt is one attempt of the reconciler's reads, the
// longest activity attempt of the house.
const reconcileReadAttempt = 2 * time.Minute

// readOptions are for the read-only activities: retried freely, but
// bounded, because the next scheduled run will read again anyway.
func (rc *reconcile) readOptions(ctx workflow.Context, summary string) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		// A SCAN of a large keyspace per SKU; heartbeats after each SKU.
		StartToCloseTimeout:    reconcileReadAttempt,
		HeartbeatTimeout:       time.Minute,
		ScheduleToCloseTimeout: 5 * time.Minute,
		RetryPolicy:            backoff(time.Second, 15*time.Second),
		Summary:                summary,
	})
}
