package workflows

import (
	"math"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/flashsale/flashsale/activities/contract"
)

// The gate: a run corrects by itself a confirmed drift of at most
// max(MaxCorrect units, MaxCorrectPercent of the SKU's total); a larger one
// is held for a person (HoldDrift: a row with the run's report, the
// FlashsaleReconcileHeld alert), and corrected by the first run that
// confirms the same drift and fence once `starter reconcile approve`
// approved it.
const (
	// DefaultMaxCorrect is the units a run corrects unattended.
	DefaultMaxCorrect = 10
	// DefaultMaxCorrectPercent is the share of the SKU's total a run
	// corrects unattended, when more than DefaultMaxCorrect.
	DefaultMaxCorrectPercent = 1.0
)

// gateVersion is the patch that put the gate before a correction.
const gateVersion = "reconcile-gate"

// ActionHeld: the confirmed drift was larger than the run corrects by
// itself; it waits for a person (HoldID).
const ActionHeld ReconcileAction = "HELD"

// limit is the most a run corrects unattended for a SKU of total units.
func (rc *reconcile) limit(total int64) int64 {
	units := rc.in.MaxCorrect
	if units <= 0 {
		units = DefaultMaxCorrect
	}
	pct := rc.in.MaxCorrectPercent
	if pct <= 0 {
		pct = DefaultMaxCorrectPercent
	}
	return max(units, int64(math.Floor(float64(total)*pct/100)))
}

// correctOrHold corrects a drift both observations agreed on, through the
// gate.
func (rc *reconcile) correctOrHold(ctx workflow.Context, res *SKUReconcile) {
	if workflow.GetVersion(ctx, gateVersion, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		rc.correct(ctx, res, 0)
		return
	}
	limit := rc.limit(res.First.Total)
	if res.First.Drift <= limit && res.First.Drift >= -limit {
		rc.correct(ctx, res, 0)
		return
	}
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout:    10 * time.Second,
		ScheduleToCloseTimeout: time.Minute,
		RetryPolicy:            backoff(time.Second, 10*time.Second),
		Summary:                "hold the drift of " + res.SKU + " for a person",
	})
	var hold contract.HoldDriftResult
	err := workflow.ExecuteActivity(actx, contract.HoldDrift, contract.HoldDriftInput{
		SKU: res.SKU, First: res.First, Second: *res.Second, Limit: limit, RunID: rc.runID,
	}).Get(ctx, &hold)
	if err != nil {
		res.Action, res.Error = ActionFailed, err.Error()
		return
	}
	res.HoldID = hold.HoldID
	if hold.Status != "APPROVED" {
		res.Action = ActionHeld
		return
	}
	rc.correct(ctx, res, hold.HoldID)
}
