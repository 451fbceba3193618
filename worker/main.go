// Command worker runs the order workflows and activities. Configuration
// comes from the environment (see internal/config); it migrates MySQL on
// start, creates the order workflow's search attributes when the namespace
// lacks them (or exits naming them, when it may not), and stops gracefully
// on SIGINT/SIGTERM, finishing the tasks it holds.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"go.temporal.io/sdk/interceptor"

	"github.com/flashsale/flashsale/internal/backend"
	"github.com/flashsale/flashsale/internal/config"
)

// extraInterceptors is empty in a production build. The fault-injection
// build (tag "faults", see lostreply_faults.go) fills it from its init.
var extraInterceptors []interceptor.WorkerInterceptor

func main() {
	logger := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	if err := run(logger); err != nil {
		logger.Error("worker stopped", "error", err)
		os.Exit(1)
	}
}

func run(logger *slog.Logger) error {
	cfg, err := config.Load()
	if err != nil {
		return fmt.Errorf("load config: %w", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	b, err := backend.Connect(ctx, cfg, logger)
	if err != nil {
		return err
	}
	defer b.Close()

	// Before polling: an order started without its search attributes
	// registered would fail, and every buy with it.
	if err := backend.EnsureSearchAttributes(ctx, b.Temporal, cfg.TemporalNamespace); err != nil {
		return err
	}
	w := b.NewWorker(extraInterceptors...)
	if err := w.Start(); err != nil {
		return fmt.Errorf("start worker: %w", err)
	}
	logger.Info("worker started", "task_queue", cfg.TaskQueue, "temporal", cfg.TemporalAddress,
		"redis", cfg.RedisAddr, "redis_cluster", cfg.RedisClusterMode())
	<-ctx.Done()
	logger.Info("stopping worker")
	w.Stop() // waits for in-flight tasks up to the worker's stop timeout
	return nil
}
