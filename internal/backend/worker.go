package backend

import (
	"context"

	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/worker"

	"github.com/flashsale/flashsale/activities"
	"github.com/flashsale/flashsale/workflows"
)

// Forwarders to workflows/worker.go, where worker registration lives now,
// for callers not yet moved (tests of several packages, internal/demo,
// internal/bench). Delete them once `grep -rn 'NewWorker()\|\.Activities()\|\.RequestResync('`
// finds no caller.

// Activities returns the order activities bound to this backend.
//
// Deprecated: use workflows.NewActivities.
func (b *Backend) Activities() *activities.Activities {
	return workflows.NewActivities(b.Temporal, b.Config, b.Stock, b.Orders, b.Guard, b.Logger)
}

// RequestResync starts or signals the SKU's resync workflow.
//
// Deprecated: use workflows.RequestResync.
func (b *Backend) RequestResync(ctx context.Context, sku string) error {
	return workflows.RequestResync(ctx, b.Temporal, b.Config.TaskQueue, sku)
}

// NewWorker returns a worker for the order task queue with everything
// registered.
//
// Deprecated: use workflows.NewWorker(b.Temporal, b.Config, workflows.NewActivities(...)).
func (b *Backend) NewWorker(interceptors ...interceptor.WorkerInterceptor) worker.Worker {
	return workflows.NewWorker(b.Temporal, b.Config, b.Activities(), interceptors...)
}
