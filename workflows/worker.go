package workflows

import (
	"context"
	"fmt"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
)

// Register puts every workflow of this package on w: the order, the
// reconciler, the resync and the sale. The workflows run their
// activities by the names in package contract; the activities themselves
// are built and registered under those names where the process is assembled
// (internal/app), with the worker's options, so workflows reaches no store.
func Register(w worker.Registry) {
	w.RegisterWorkflow(OrderWorkflow)
	w.RegisterWorkflow(ReconcileWorkflow)
	w.RegisterWorkflow(ResyncWorkflow)
	w.RegisterWorkflow(SaleWorkflow)
	w.RegisterWorkflow(CampaignWorkflow)
}

// LongestTask is the longest a worker may be holding one task: the longest
// activity attempt (StartToCloseTimeout: the reconciler's reads), or a
// workflow task waiting for its local activities with their retries (the
// reservation's budget). Raise one of those and the stop timeout follows.
const LongestTask = max(reconcileReadAttempt, resyncAttempt, settleAttempt, reserveBudget, inTaskBudget)

// StopTimeout is how long a stopping worker lets the tasks it holds
// finish (worker.Options.WorkerStopTimeout; the SDK's default is 0: every
// activity cancelled on Stop and run again elsewhere, a local activity's
// result thrown away with its workflow task). It is LongestTask and a few
// seconds to report the result. Stop returns as soon as nothing is held, so
// an idle worker still stops at once. Whatever kills a stopping worker
// (compose's stop_grace_period, scripts/cluster.sh stop) waits longer.
const StopTimeout = LongestTask + 5*time.Second

// RequestResync starts the SKU's resync workflow on taskQueue, or signals
// the one running (Signal-With-Start), after a degraded order moved its
// units.
func RequestResync(ctx context.Context, c client.Client, taskQueue, sku string) error {
	id := ResyncWorkflowID(sku)
	_, err := c.SignalWithStartWorkflow(ctx, id, SignalResyncRequested, nil,
		client.StartWorkflowOptions{ID: id, TaskQueue: taskQueue},
		ResyncWorkflow, ResyncInput{SKU: sku})
	if err != nil {
		return fmt.Errorf("signal-with-start %s: %w", id, err)
	}
	return nil
}
