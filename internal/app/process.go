package app

import (
	"context"
	"io"
	"log/slog"
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

// SignalContext returns a copy of ctx that is done on SIGINT or SIGTERM:
// the start of a graceful stop for both commands.
func SignalContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
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
