package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/flashsale/flashsale/internal/backend"
	"github.com/flashsale/flashsale/internal/buildinfo"
	"github.com/flashsale/flashsale/internal/config"
	"github.com/flashsale/flashsale/internal/httpapi"
	"github.com/flashsale/flashsale/internal/identity"
)

// shutdownGrace lets a buyer whose reservation is under way get the answer:
// it exceeds the longest request (Update-with-Start, 30 s).
const shutdownGrace = 35 * time.Second

// NewHTTPAPI returns the HTTP API over b's stores and Temporal client,
// verifying buyers' tokens as apiCfg.Identity says; the caller runs its
// stock-change listener (Run) and serves its HTTPServer.
func NewHTTPAPI(ctx context.Context, b *backend.Backend, apiCfg httpapi.Config) (*httpapi.Server, error) {
	deps := httpapi.FromBackend(b)
	var err error
	if deps.Buyers, err = identity.NewVerifier(ctx, apiCfg.Identity); err != nil {
		return nil, err
	}
	return httpapi.New(deps, apiCfg)
}

// APIOptions are the API process's settings beyond its two configs.
type APIOptions struct {
	// MetricsAddr serves Prometheus metrics (METRICS_ADDR); empty: off.
	MetricsAddr string
}

// API is the HTTP API process: connected, its metrics registered, the
// server built (NewHTTPAPI). Run it, then Close it.
type API struct {
	cfg    config.Config
	apiCfg httpapi.Config
	logger *slog.Logger
	p      *process
	api    *httpapi.Server
}

// OpenAPI connects to cfg's services and builds the HTTP API.
func OpenAPI(ctx context.Context, cfg config.Config, apiCfg httpapi.Config, logger *slog.Logger, opts APIOptions) (_ *API, err error) {
	p, err := open(ctx, cfg, logger, opts.MetricsAddr)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			p.Close()
		}
	}()
	api, err := NewHTTPAPI(ctx, p.backend, apiCfg)
	if err != nil {
		return nil, err
	}
	if mx := p.metrics; mx != nil {
		if err := errors.Join(p.backend.RegisterMetrics(mx.Registry), api.RegisterMetrics(mx.Registry)); err != nil {
			return nil, fmt.Errorf("register metrics: %w", err)
		}
	}
	return &API{cfg: cfg, apiCfg: apiCfg, logger: logger, p: p, api: api}, nil
}

// Run serves apiCfg.Addr until ctx is done or serving fails. When ctx is
// done it fails /readyz, stops accepting connections and lets in-flight
// requests finish, up to shutdownGrace.
func (a *API) Run(ctx context.Context) error {
	api := a.api
	listenerCtx, stopListener := context.WithCancel(ctx)
	defer stopListener()
	listening := make(chan error, 1)
	go func() { listening <- api.Run(listenerCtx) }()
	// Counted by the go/no-go before a sale (Preflight).
	go backend.AnnounceAPI(listenerCtx, a.p.backend.Redis)

	srv := api.HTTPServer()
	served := make(chan error, 1)
	go func() { served <- srv.ListenAndServe() }()
	a.logger.Info("api started", "addr", a.apiCfg.Addr, "task_queue", a.cfg.TaskQueue, "temporal", a.cfg.TemporalAddress,
		slog.Group("build", buildinfo.Read().LogAttrs()...))

	select {
	case err := <-served:
		return fmt.Errorf("serve %s: %w", a.apiCfg.Addr, err)
	case err := <-listening:
		return fmt.Errorf("stock-change listener: %w", err)
	case <-ctx.Done():
	}
	a.logger.Info("stopping api")
	api.Drain()
	// ctx is done; the grace period is a fresh budget.
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownGrace)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	stopListener()
	return <-listening
}

// Close disconnects and stops the metrics listener.
func (a *API) Close() { a.p.Close() }
