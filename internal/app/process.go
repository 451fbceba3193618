package app

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/flashsale/flashsale/internal/backend"
	"github.com/flashsale/flashsale/internal/config"
	"github.com/flashsale/flashsale/internal/metrics"
)

// NewLogger returns a process's JSON logger, configured from getenv
// (config.NewLogger), and sends go-redis's own lines through it: at
// start, before any client exists.
func NewLogger(getenv func(string) string, w io.Writer) (*slog.Logger, error) {
	logger, err := config.NewLogger(getenv, w)
	if err != nil {
		return nil, err
	}
	backend.SetRedisLogger(logger)
	return logger, nil
}

// Process is a command's running half, the worker (OpenWorker) or the API
// (OpenAPI): Run until its context is done, then Close.
type Process interface {
	Run(ctx context.Context) error
	Close()
}

// Run is the rest of a command once its flags are read: it loads the
// configuration from the environment, opens the process, and runs it until
// SIGINT or SIGTERM, the start of a graceful stop. open reads what only its
// command needs, after the shared configuration, and connects.
func Run(open func(ctx context.Context, cfg config.Config) (Process, error)) error {
	cfg, err := config.Load()
	if err != nil {
		return fmt.Errorf("load config: %w", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	p, err := open(ctx, cfg)
	if err != nil {
		return err
	}
	defer p.Close()
	return p.Run(ctx)
}

// process is what the worker and the API open the same way: the metrics
// listener (nil when metrics are off) and the backend, whose Temporal
// client feeds that listener.
type process struct {
	metrics *metrics.Process
	backend *backend.Backend
}

// open listens for metrics on metricsAddr (off when empty) before it
// connects, so a port already taken fails the start rather than a scrape.
func open(ctx context.Context, cfg config.Config, logger *slog.Logger, metricsAddr string) (*process, error) {
	mx, err := metrics.Start(metricsAddr, logger)
	if err != nil {
		return nil, err
	}
	var connectOpts []backend.Option
	if mx != nil && os.Getenv(metrics.ProfilesEnv) == "true" {
		mx.ServeProfiles()
	}
	if mx != nil {
		connectOpts = append(connectOpts, backend.WithTemporalMetrics(mx.Temporal))
	}
	b, err := backend.Connect(ctx, cfg, logger, connectOpts...)
	if err != nil {
		mx.Close()
		return nil, err
	}
	return &process{metrics: mx, backend: b}, nil
}

// Close disconnects, then stops the metrics listener.
func (p *process) Close() {
	p.backend.Close()
	p.metrics.Close()
}
