package workflows

import (
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/flashsale/flashsale/activities/contract"
)

// salePreflightChange is the patch (docs/versioning.md) that runs the
// go/no-go just before a sale opens. A sale started before it opens
// without one, as it did.
const salePreflightChange = "sale-preflight"

// preflightOptions: the checks read Redis, MySQL and Temporal, each
// bounded; an attempt that cannot write the hold is retried (the open
// would fail on the same Redis anyway).
var preflightOptions = workflow.ActivityOptions{
	StartToCloseTimeout: time.Minute,
	RetryPolicy:         saleStepOptions.RetryPolicy,
}

// preflight runs the go/no-go just before the open (the caller holds mu):
// when a check fails, PreflightSale marks the sale to open PAUSED, and the
// failing checks go into the view and the Web UI's current details, for
// an operator to fix and resume.
func (s *saleRun) preflight(ctx workflow.Context) error {
	if !s.checks || s.view.Unqueued {
		return nil
	}
	var rep contract.PreflightReport
	if err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, preflightOptions), contract.PreflightSale,
		contract.PreflightInput{SKUs: []string{s.in.SKU}, ExpectedPeak: s.in.ExpectedPeak, Hold: true}).Get(ctx, &rep); err != nil {
		return fmt.Errorf("go/no-go: %w", err)
	}
	for _, c := range rep.Checks {
		if !c.OK {
			s.view.Preflight = append(s.view.Preflight, c)
		}
	}
	if len(rep.Failed) == 0 {
		return nil
	}
	s.logger.Warn("go/no-go failed: the sale opens PAUSED", "failed", rep.Failed)
	workflow.SetCurrentDetails(ctx, fmt.Sprintf("PAUSED by the go/no-go: %s failed; fix, then resume", strings.Join(rep.Failed, ", ")))
	return nil
}
