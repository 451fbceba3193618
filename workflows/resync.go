package workflows

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/flashsale/flashsale/activities/contract"
)

// ResyncWorkflowID is the id of the workflow that re-syncs one SKU's Redis
// buckets from MySQL after degraded orders ("resync-<sku>"). One runs per
// SKU at a time: requests for a running one are signals to it.
func ResyncWorkflowID(sku string) string { return "resync-" + sku }

// SignalResyncRequested tells a SKU's resync workflow that another degraded
// order moved units (activities.Activities.RequestResync sends it with
// Signal-With-Start).
const SignalResyncRequested = "resync-requested"

// ResyncInput names the SKU.
type ResyncInput struct {
	SKU string `json:"sku_id"`
}

// ResyncResult is what the workflow did.
type ResyncResult struct {
	SKU string `json:"sku_id"`
	// Passes counts ResyncStock runs: one, plus one per request that came
	// in while a pass ran.
	Passes int                        `json:"passes"`
	Last   contract.ResyncStockResult `json:"last"`
}

// maxResyncPasses bounds one run's history; the next run carries on.
const maxResyncPasses = 100

// resyncAttempt is one attempt of the resync activity: it moves a SKU's
// whole Redis stock back from MySQL.
const resyncAttempt = 30 * time.Second

// ResyncWorkflow re-syncs a SKU's Redis buckets from MySQL once Redis is
// back, then clears the SKU's resync flag so buyers use Redis again
// (Reconciler.ResyncStock explains how that is exact). The activity retries
// without limit while Redis is down: the retry policy is the wait.
//
// Requests that arrive while a pass runs are drained after it and cause
// another pass, so the last request always has a pass that started after
// it. A request arriving as the workflow completes makes Temporal refuse
// the completion (a new event came in), and the next workflow task sees it.
func ResyncWorkflow(ctx workflow.Context, in ResyncInput) (ResyncResult, error) {
	out := ResyncResult{SKU: in.SKU}
	requests := workflow.GetSignalChannel(ctx, SignalResyncRequested)
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: resyncAttempt,
		RetryPolicy:         backoff(200*time.Millisecond, 2*time.Second),
		Summary:             "re-sync redis from mysql",
	})
	drain := func() bool {
		got := false
		for requests.ReceiveAsync(nil) {
			got = true
		}
		return got
	}
	drain()
	for {
		out.Passes++
		if err := workflow.ExecuteActivity(actx, contract.ResyncStock,
			contract.ResyncStockInput{SKU: in.SKU}).Get(ctx, &out.Last); err != nil {
			return out, fmt.Errorf("resync %s: %w", in.SKU, err)
		}
		if !drain() {
			return out, nil
		}
		if out.Passes >= maxResyncPasses {
			return out, workflow.NewContinueAsNewError(ctx, ResyncWorkflow, in)
		}
	}
}
