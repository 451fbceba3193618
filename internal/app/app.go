// Package app assembles the flash sale's processes out of a connected
// backend: the worker (NewWorker, OpenWorker) and the HTTP API (NewHTTPAPI,
// OpenAPI). worker/main.go, api/main.go, the demo and the tests that need
// the whole system build them here, so they run the same registrations and
// settings, and the two commands share one start-up (Main, Run).
package app

import (
	"context"

	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/worker"

	"github.com/flashsale/flashsale/activities"
	"github.com/flashsale/flashsale/internal/backend"
	"github.com/flashsale/flashsale/internal/catalog"
	"github.com/flashsale/flashsale/internal/config"
	"github.com/flashsale/flashsale/internal/orders"
	"github.com/flashsale/flashsale/internal/requestid"
	"github.com/flashsale/flashsale/internal/sale"
	"github.com/flashsale/flashsale/workflows"
)

// Activities returns the order activities over b's stores, with the
// worker's settings from b.Config. A degraded order asks for its SKUs'
// resync through b.Temporal (workflows.RequestResync).
func Activities(b *backend.Backend) *activities.Activities {
	cfg := b.Config
	return &activities.Activities{
		Stock: b.Stock, Orders: b.Orders, Logger: b.Logger,
		Sales:               SaleStore(b),
		PaymentTimeout:      cfg.PaymentTimeout,
		UserIDKey:           cfg.UserIDKey,
		Guard:               b.Guard,
		DegradedConcurrency: cfg.DegradedConcurrency,
		CancelRunningOrders: func(ctx context.Context, sku, reason string, signalled map[string]bool) (int, error) {
			return (&orders.Service{Temporal: b.Temporal, TaskQueue: cfg.TaskQueue, Orders: b.Orders, Logger: b.Logger}).
				CancelRunning(ctx, sku, reason, signalled)
		},
		CountRunningOrders: func(ctx context.Context, sku string) (int64, error) {
			return (&orders.Service{Temporal: b.Temporal, Orders: b.Orders}).CountRunningOrders(ctx, sku)
		},
		OrderWorkflowID: workflows.OrderWorkflowID,
		Preflight:       Preflight(b),
		RequestResync: func(ctx context.Context, sku string) error {
			return workflows.RequestResync(ctx, b.Temporal, cfg.TaskQueue, sku)
		},
	}
}

// SaleStore is the fair sales' Redis store on b, reading units from b's
// buckets and keeping each sale's seed in b's MySQL until the open.
func SaleStore(b *backend.Backend) *sale.Store {
	return sale.New(b.Redis, func(ctx context.Context, sku string) (int64, error) {
		av, err := b.Stock.AvailableTo(ctx, sku, "")
		return av.Units, err
	}).WithSeeds(b.Orders)
}

// NewWorker returns a worker on b's task queue with every workflow
// (workflows.Register) and activity (RegisterActivities) registered; the
// caller starts and stops it. Interceptors wrap every workflow and activity, local ones included:
// the worker process passes its activity metrics and, in the
// fault-injection build, its fault injectors.
func NewWorker(b *backend.Backend, interceptors ...interceptor.WorkerInterceptor) worker.Worker {
	cfg := b.Config
	w := worker.New(b.Temporal, cfg.TaskQueue, worker.Options{
		MaxConcurrentActivityExecutionSize:      cfg.WorkerConcurrency,
		MaxConcurrentLocalActivityExecutionSize: cfg.WorkerConcurrency,
		MaxConcurrentWorkflowTaskExecutionSize:  cfg.WorkerConcurrency,
		// More than the SDK's 2 (config.Config.WorkflowPollers): with 2,
		// placements queue for the one poller of the task queue.
		MaxConcurrentWorkflowTaskPollers: workflowPollers(cfg.WorkflowPollers),
		WorkerStopTimeout:                workflows.StopTimeout,
		// Named, so the worker's /readyz finds it among the task queue's
		// pollers.
		Identity: WorkerIdentity(cfg.TaskQueue),
		// request_id on the workflows' and activities' loggers first, so
		// the other interceptors' log lines carry it too.
		Interceptors: append([]interceptor.WorkerInterceptor{requestid.NewWorkerInterceptor()}, interceptors...),
	})
	workflows.Register(w)
	RegisterActivities(w, Activities(b))
	// A campaign's steps are the catalog's use cases (carve, define,
	// preheat, restock, the sales' controls).
	w.RegisterActivity(&catalog.CampaignSteps{
		Catalog: catalog.Catalog{DB: b.Orders, Redis: b.Stock, Temporal: b.Temporal},
		Sales:   catalog.Sales{DB: b.Orders, Temporal: b.Temporal, TaskQueue: cfg.TaskQueue},
	})
	return w
}

// workflowPollers is n, or the default for a Config built by hand (the
// SDK refuses 1, and 0 would mean its own default of 2).
func workflowPollers(n int) int {
	if n < 2 {
		return config.DefaultWorkflowPollers
	}
	return n
}

// RegisterActivities puts acts and the reconciler's activities on w, each
// method under its own name: the names the workflows run them by (package
// contract) and that recorded histories carry. The reconciler shares the
// order activities' stores and logger.
func RegisterActivities(w worker.Registry, acts *activities.Activities) {
	w.RegisterActivity(acts)
	w.RegisterActivity(&activities.Reconciler{
		Stock: acts.Stock, Orders: acts.Orders, Logger: acts.Logger, OrderWorkflowID: workflows.OrderWorkflowID,
	})
}
