package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/flashsale/flashsale/internal/backend"
	"github.com/flashsale/flashsale/internal/orderdb"
	"github.com/flashsale/flashsale/workflows"
)

// reconcileRunTimeout backstops a scheduled run: with overlap SKIP, a run
// that never ended would block every later one. Every activity of the run
// is bounded already, so this only fires on a bug.
const reconcileRunTimeout = time.Hour

func runReconcile(ctx context.Context, args []string) (any, error) {
	if len(args) == 0 {
		return nil, usageError("usage: starter reconcile schedule|now|holds|approve|reject [flags]")
	}
	if isHelp(args[0]) {
		return nil, subcommandHelp("reconcile", "schedule", "now", "holds", "approve", "reject")
	}
	switch args[0] {
	case "schedule":
		return runReconcileSchedule(ctx, args[1:])
	case "now":
		return runReconcileNow(ctx, args[1:])
	case "holds":
		return runReconcileHolds(ctx, args[1:])
	case "approve", "reject":
		return runReconcileDecide(ctx, args[0], args[1:])
	}
	return nil, usageError(fmt.Sprintf("unknown reconcile command %q: want schedule, now, holds, approve or reject", args[0]))
}

// scheduleResult is the output of reconcile schedule.
type scheduleResult struct {
	ScheduleID string        `json:"schedule_id"`
	WorkflowID string        `json:"workflow_id"`
	TaskQueue  string        `json:"task_queue"`
	Every      time.Duration `json:"every"`
	Settle     time.Duration `json:"settle"`
	// Created is false when an existing schedule was updated instead.
	Created bool `json:"created"`
	// Triggered: --now asked for a run at once (skipped if one runs).
	Triggered bool `json:"triggered"`
}

// runReconcileSchedule creates the reconcile Schedule, or updates it to the
// given settings if it exists, so running it twice is harmless.
func runReconcileSchedule(ctx context.Context, args []string) (any, error) {
	fs := flag.NewFlagSet("reconcile schedule", flag.ContinueOnError)
	every := fs.Duration("every", time.Minute, "how often a run starts (skipped while the previous one still runs)")
	sku := fs.String("sku", "", "reconcile only this SKU (default: every SKU)")
	settle := fs.Duration("settle", workflows.DefaultReconcileSettle, "wait between the two observations a correction needs")
	now := fs.Bool("now", false, "also start one run now (Redis of a stack just started is empty until a run)")
	gate := gateFlags(fs)
	if err := parse(fs, args); err != nil {
		return nil, err
	}
	if *every < time.Second || *settle <= 0 {
		return nil, usageError("--every must be at least 1s and --settle positive")
	}
	b, err := connect(ctx)
	if err != nil {
		return nil, err
	}
	defer b.Close()

	in := workflows.ReconcileInput{Settle: *settle}
	gate(&in)
	if *sku != "" {
		in.SKUs = []string{*sku}
	}
	spec := client.ScheduleSpec{Intervals: []client.ScheduleIntervalSpec{{Every: *every}}}
	action := &client.ScheduleWorkflowAction{
		ID:                       workflows.ReconcileWorkflowID(*sku),
		Workflow:                 workflows.ReconcileWorkflow,
		Args:                     []any{in},
		TaskQueue:                b.Config.TaskQueue,
		WorkflowExecutionTimeout: reconcileRunTimeout,
	}
	out := scheduleResult{
		ScheduleID: workflows.ReconcileScheduleID(*sku), WorkflowID: action.ID,
		TaskQueue: b.Config.TaskQueue, Every: *every, Settle: *settle, Created: true,
	}
	sc := b.Temporal.ScheduleClient()
	_, err = sc.Create(ctx, client.ScheduleOptions{
		ID:     out.ScheduleID,
		Spec:   spec,
		Action: action,
		// Runs never overlap: a correction is only valid against the
		// observations of its own run (the fence keeps overlapping runs
		// safe too, but they would only waste work).
		Overlap: enums.SCHEDULE_OVERLAP_POLICY_SKIP,
		Note:    "flashsale: bring Redis stock in step with MySQL",
	})
	if err != nil {
		if !errors.Is(err, temporal.ErrScheduleAlreadyRunning) {
			return nil, fmt.Errorf("create schedule %s: %w", out.ScheduleID, err)
		}
		out.Created = false
		if err = updateSchedule(ctx, sc, out.ScheduleID, spec, action); err != nil {
			return nil, err
		}
	}
	if *now {
		err = sc.GetHandle(ctx, out.ScheduleID).Trigger(ctx, client.ScheduleTriggerOptions{Overlap: enums.SCHEDULE_OVERLAP_POLICY_SKIP})
		if err != nil {
			return nil, fmt.Errorf("trigger schedule %s: %w", out.ScheduleID, err)
		}
		out.Triggered = true
	}
	return out, nil
}

// updateSchedule sets an existing schedule's spec, action and overlap policy.
func updateSchedule(ctx context.Context, sc client.ScheduleClient, id string, spec client.ScheduleSpec, action *client.ScheduleWorkflowAction) error {
	err := sc.GetHandle(ctx, id).Update(ctx, client.ScheduleUpdateOptions{
		DoUpdate: func(cur client.ScheduleUpdateInput) (*client.ScheduleUpdate, error) {
			s := cur.Description.Schedule
			s.Spec, s.Action = &spec, action
			if s.Policy == nil {
				s.Policy = &client.SchedulePolicies{}
			}
			s.Policy.Overlap = enums.SCHEDULE_OVERLAP_POLICY_SKIP
			return &client.ScheduleUpdate{Schedule: &s}, nil
		},
	})
	if err != nil {
		return fmt.Errorf("update schedule %s: %w", id, err)
	}
	return nil
}

// runReconcileNow runs one reconciliation and prints what it did. A run of
// the same scope already in progress is joined rather than doubled.
func runReconcileNow(ctx context.Context, args []string) (any, error) {
	fs := flag.NewFlagSet("reconcile now", flag.ContinueOnError)
	sku := fs.String("sku", "", "reconcile only this SKU (default: every SKU)")
	settle := fs.Duration("settle", workflows.DefaultReconcileSettle, "wait between the two observations a correction needs")
	dryRun := fs.Bool("dry-run", false, "observe and report, change nothing")
	gate := gateFlags(fs)
	if err := parse(fs, args); err != nil {
		return nil, err
	}
	if *settle <= 0 {
		return nil, usageError("--settle must be positive")
	}
	in := workflows.ReconcileInput{Settle: *settle, DryRun: *dryRun}
	gate(&in)
	return withBackend(ctx, func(b *backend.Backend) (any, error) { return reconcileOnce(ctx, b, *sku, in) })
}

// reconcileOnce runs one reconciliation of sku ("": every SKU) and answers
// what it did. A run of the same scope in progress is joined.
func reconcileOnce(ctx context.Context, b *backend.Backend, sku string, in workflows.ReconcileInput) (any, error) {
	if sku != "" {
		in.SKUs = []string{sku}
	}
	run, err := b.Temporal.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:        workflows.ReconcileWorkflowID(sku),
		TaskQueue: b.Config.TaskQueue,
		// Two operators pressing the button get one run and one answer.
		WorkflowIDConflictPolicy: enums.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		WorkflowIDReusePolicy:    enums.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		WorkflowExecutionTimeout: reconcileRunTimeout,
		StaticSummary:            "manual reconcile of " + workflows.ReconcileWorkflowID(sku),
	}, workflows.ReconcileWorkflow, in)
	if err != nil {
		return nil, fmt.Errorf("start reconcile: %w", err)
	}
	var res workflows.ReconcileResult
	if err := run.Get(ctx, &res); err != nil {
		return nil, fmt.Errorf("reconcile run %s: %w", run.GetID(), err)
	}
	return res, nil
}

// gateFlags are the gate's bounds (workflows/gate.go); the returned
// function copies them into a run's input.
func gateFlags(fs *flag.FlagSet) func(*workflows.ReconcileInput) {
	units := fs.Int64("max-correct", workflows.DefaultMaxCorrect, "units of drift a run corrects by itself; a larger drift is held for approval")
	pct := fs.Float64("max-correct-percent", workflows.DefaultMaxCorrectPercent, "or this percent of the SKU's total, if more")
	return func(in *workflows.ReconcileInput) { in.MaxCorrect, in.MaxCorrectPercent = *units, *pct }
}

// runReconcileHolds lists the drifts held for a person, with their reports.
func runReconcileHolds(ctx context.Context, args []string) (any, error) {
	fs := flag.NewFlagSet("reconcile holds", flag.ContinueOnError)
	status := fs.String("status", orderdb.HoldPending, "PENDING, APPROVED, REJECTED, APPLIED, or all")
	if err := parse(fs, args); err != nil {
		return nil, err
	}
	if *status == "all" {
		*status = ""
	}
	return withBackend(ctx, func(b *backend.Backend) (any, error) { return orNothing(b.Orders.Holds(ctx, *status)) })
}

// decided is the answer of reconcile approve and reject.
type decided struct {
	Hold orderdb.Hold `json:"hold"`
	// Run is the reconcile run an approval started for the SKU.
	Run any `json:"run,omitempty"`
}

// runReconcileDecide approves or rejects a held drift. An approval starts
// a run of the SKU, which corrects the drift if it still confirms it.
func runReconcileDecide(ctx context.Context, verb string, args []string) (any, error) {
	fs := flag.NewFlagSet("reconcile "+verb, flag.ContinueOnError)
	id := fs.Int64("id", 0, "the hold's id (starter reconcile holds)")
	by := fs.String("by", os.Getenv("USER"), "who decides, kept with the hold")
	settle := fs.Duration("settle", workflows.DefaultReconcileSettle, "with approve: the run's wait between its two observations")
	if err := parse(fs, args); err != nil {
		return nil, err
	}
	if *id <= 0 {
		return nil, usageError("--id is required")
	}
	return withBackend(ctx, func(b *backend.Backend) (any, error) {
		h, err := b.Orders.DecideHold(ctx, *id, verb == "approve", *by)
		if err != nil || verb != "approve" {
			return orNothing(decided{Hold: h}, err)
		}
		run, err := reconcileOnce(ctx, b, h.SKU, workflows.ReconcileInput{Settle: *settle})
		return orNothing(decided{Hold: h, Run: run}, err)
	})
}
