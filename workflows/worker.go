package workflows

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/worker"

	"github.com/flashsale/flashsale/activities"
	"github.com/flashsale/flashsale/internal/config"
	"github.com/flashsale/flashsale/internal/inventory"
	"github.com/flashsale/flashsale/internal/orderdb"
	"github.com/flashsale/flashsale/internal/redisguard"
	"github.com/flashsale/flashsale/internal/requestid"
)

// Register puts every workflow of this package and the activities they
// run on w: the order, the reconciler and the resync. The reconciler's
// activities share the order activities' stores and logger.
func Register(w worker.Registry, acts *activities.Activities) {
	w.RegisterWorkflow(OrderWorkflow)
	w.RegisterActivity(acts)
	w.RegisterWorkflow(ReconcileWorkflow)
	w.RegisterWorkflow(ResyncWorkflow)
	w.RegisterActivity(&activities.Reconciler{
		Stock: acts.Stock, Orders: acts.Orders, Logger: acts.Logger, OrderWorkflowID: OrderWorkflowID,
	})
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

// NewWorker returns a worker for cfg.TaskQueue with Register done. The
// caller starts and stops it. Interceptors wrap every workflow and
// activity, local ones included; the fault-injection build of the worker
// passes its fault injectors here.
func NewWorker(c client.Client, cfg config.Config, acts *activities.Activities, interceptors ...interceptor.WorkerInterceptor) worker.Worker {
	w := worker.New(c, cfg.TaskQueue, worker.Options{
		MaxConcurrentActivityExecutionSize:      cfg.WorkerConcurrency,
		MaxConcurrentLocalActivityExecutionSize: cfg.WorkerConcurrency,
		MaxConcurrentWorkflowTaskExecutionSize:  cfg.WorkerConcurrency,
		WorkerStopTimeout:                       StopTimeout,
		// request_id on the workflows' and activities' loggers first, so
		// the other interceptors' log lines carry it too.
		Interceptors: append([]interceptor.WorkerInterceptor{requestid.NewWorkerInterceptor()}, interceptors...),
	})
	Register(w, acts)
	return w
}

// NewActivities returns the order activities over these stores, with the
// worker's settings from cfg. A degraded order asks for its SKUs' resync
// through c (RequestResync).
func NewActivities(c client.Client, cfg config.Config, stock *inventory.Store, orders *orderdb.Store,
	guard *redisguard.Guard, logger *slog.Logger) *activities.Activities {
	return &activities.Activities{
		Stock: stock, Orders: orders, Logger: logger,
		PaymentTimeout:      cfg.PaymentTimeout,
		Guard:               guard,
		DegradedConcurrency: cfg.DegradedConcurrency,
		RequestResync: func(ctx context.Context, sku string) error {
			return RequestResync(ctx, c, cfg.TaskQueue, sku)
		},
	}
}

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
