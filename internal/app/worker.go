package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/worker"

	"github.com/flashsale/flashsale/internal/backend"
	"github.com/flashsale/flashsale/internal/buildinfo"
	"github.com/flashsale/flashsale/internal/config"
	"github.com/flashsale/flashsale/workflows"
)

// WorkerOptions are the worker process's settings beyond config.Config.
type WorkerOptions struct {
	// MetricsAddr serves Prometheus metrics (METRICS_ADDR); empty: off.
	MetricsAddr string
	// Interceptors go on the worker after the activity metrics' (the
	// fault-injection build's fault injectors).
	Interceptors []interceptor.WorkerInterceptor
}

// Worker is the worker process: connected, its metrics registered, the
// order workflow's search attributes ensured, and the Temporal worker
// built (NewWorker). Run it, then Close it.
type Worker struct {
	cfg    config.Config
	logger *slog.Logger
	p      *process
	w      worker.Worker
	// health answers /healthz and /readyz on the metrics listener.
	health *workerHealth
}

// OpenWorker connects to cfg's services and builds the worker. It creates
// the order workflow's search attributes when the namespace lacks them, or
// fails naming them when it may not.
func OpenWorker(ctx context.Context, cfg config.Config, logger *slog.Logger, opts WorkerOptions) (_ *Worker, err error) {
	p, err := open(ctx, cfg, logger, opts.MetricsAddr)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			p.Close()
		}
	}()
	b := p.backend
	interceptors := opts.Interceptors
	if mx := p.metrics; mx != nil {
		activityMetrics := NewActivityMetrics()
		backlog := newBacklogCollector(b.Temporal, b.Orders)
		if err := errors.Join(b.RegisterMetrics(mx.Registry), mx.Registry.Register(activityMetrics),
			mx.Registry.Register(backlog), mx.Registry.Register(PreflightFailures)); err != nil {
			return nil, fmt.Errorf("register metrics: %w", err)
		}
		interceptors = append([]interceptor.WorkerInterceptor{activityMetrics.Interceptor()}, interceptors...)
	}
	// Before polling: an order started without its search attributes
	// registered would fail, and every buy with it.
	if err := workflows.EnsureSearchAttributes(ctx, b.Temporal, cfg.TemporalNamespace); err != nil {
		return nil, err
	}
	health := &workerHealth{temporal: b.Temporal, taskQueue: cfg.TaskQueue, identity: WorkerIdentity(cfg.TaskQueue), logger: logger,
		eviction: backend.CachedEviction(b.CheckEviction, time.Now)}
	if mx := p.metrics; mx != nil {
		health.register(mx)
	}
	return &Worker{cfg: cfg, logger: logger, p: p, w: NewWorker(b, interceptors...), health: health}, nil
}

// Run polls until ctx is done, then stops gracefully: it polls no more and
// lets the tasks it holds finish, up to workflows.StopTimeout, then
// cancels what is left.
func (w *Worker) Run(ctx context.Context) error {
	if err := w.w.Start(); err != nil {
		return fmt.Errorf("start worker: %w", err)
	}
	w.health.polling.Store(true)
	cfg := w.cfg
	w.logger.Info("worker started", "task_queue", cfg.TaskQueue, "temporal", cfg.TemporalAddress,
		"redis", cfg.RedisAddr, "redis_cluster", cfg.RedisClusterMode(), slog.Group("build", buildinfo.Read().LogAttrs()...))
	<-ctx.Done()
	// Not ready from the first moment of the stop.
	w.health.polling.Store(false)
	w.logger.Info("stopping worker")
	w.w.Stop()
	w.logger.Info("worker stopped")
	return nil
}

// Close disconnects and stops the metrics listener.
func (w *Worker) Close() { w.p.Close() }
