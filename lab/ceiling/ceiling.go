// Package ceiling holds the cheapest durable "order" Temporal can run: a
// workflow started by Update-with-Start whose update returns at once and
// which then completes. Benchmarks run it beside the real OrderWorkflow on
// the same server, so the real order's cost is reported as a ratio against
// what the server itself allows, not as an absolute number that drifts with
// the machine.
package ceiling

import (
	"go.temporal.io/sdk/workflow"
)

// UpdateName is the ceiling workflow's only update.
const UpdateName = "reserve"

// Answer is what the update returns.
type Answer struct {
	OrderID string `json:"order_id"`
}

// Workflow accepts one update, answers it immediately and completes.
func Workflow(ctx workflow.Context, orderID string) error {
	answered := false
	if err := workflow.SetUpdateHandler(ctx, UpdateName, func(ctx workflow.Context) (Answer, error) {
		answered = true
		return Answer{OrderID: orderID}, nil
	}); err != nil {
		return err
	}
	return workflow.Await(ctx, func() bool { return answered && workflow.AllHandlersFinished(ctx) })
}
