// Package app assembles the flash sale's worker out of a connected backend:
// the one way worker/main.go, the demo and the tests that need the whole
// system build it, so they run the same registrations and settings.
package app

import (
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/worker"

	"github.com/flashsale/flashsale/activities"
	"github.com/flashsale/flashsale/internal/backend"
	"github.com/flashsale/flashsale/workflows"
)

// Activities returns the order activities over b's stores, with the
// worker's settings from b.Config.
func Activities(b *backend.Backend) *activities.Activities {
	return workflows.NewActivities(b.Temporal, b.Config, b.Stock, b.Orders, b.Guard, b.Logger)
}

// NewWorker returns a worker on b's task queue with every workflow and
// activity registered; the caller starts and stops it.
func NewWorker(b *backend.Backend, interceptors ...interceptor.WorkerInterceptor) worker.Worker {
	return workflows.NewWorker(b.Temporal, b.Config, Activities(b), interceptors...)
}
