// Command api serves the flash sale's HTTP API (internal/httpapi).
//
// Configuration comes from the environment: the services like the worker
// (internal/config), plus HTTP_ADDR (default :8080), WEBHOOK_SECRET (comma
// separated, newest first), ADMIN_TOKEN and BUYER_JWT_SECRET or
// BUYER_JWKS_URL (internal/identity), which have no defaults, and
// optionally BUYER_JWT_AUDIENCE, BUYER_JWT_ISSUER, BUY_RATE_PER_USER,
// EDGE_MAX_IN_FLIGHT and WAITLIST_PER_UNIT. On SIGINT/SIGTERM it
// fails /readyz, stops accepting connections and lets in-flight requests
// finish.
//
//	api               serve
//	api -healthcheck  GET /readyz on HTTP_ADDR; exit 0 if ready (for
//	                  container health checks: the image has no curl)
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/flashsale/flashsale/internal/backend"
	"github.com/flashsale/flashsale/internal/config"
	"github.com/flashsale/flashsale/internal/httpapi"
	"github.com/flashsale/flashsale/internal/identity"
)

// shutdownGrace lets a buyer whose reservation is under way get the answer:
// it exceeds the longest request (Update-with-Start, 30 s).
const shutdownGrace = 35 * time.Second

func main() {
	healthcheck := flag.Bool("healthcheck", false, "check /readyz of a running api on HTTP_ADDR and exit")
	flag.Parse()
	logger := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	if *healthcheck {
		if err := checkHealth(os.Getenv("HTTP_ADDR")); err != nil {
			fmt.Fprintln(os.Stderr, "unhealthy:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(logger); err != nil {
		logger.Error("api stopped", "error", err)
		os.Exit(1)
	}
}

func run(logger *slog.Logger) error {
	cfg, err := config.Load()
	if err != nil {
		return fmt.Errorf("load config: %w", err)
	}
	apiCfg, err := httpapi.LoadConfig(os.Getenv)
	if err != nil {
		return fmt.Errorf("load api config: %w", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	b, err := backend.Connect(ctx, cfg, logger)
	if err != nil {
		return err
	}
	defer b.Close()
	deps := httpapi.FromBackend(b)
	if deps.Buyers, err = identity.NewVerifier(ctx, apiCfg.Identity); err != nil {
		return err
	}
	api, err := httpapi.New(deps, apiCfg)
	if err != nil {
		return err
	}

	listenerCtx, stopListener := context.WithCancel(ctx)
	defer stopListener()
	listening := make(chan error, 1)
	go func() { listening <- api.Run(listenerCtx) }()

	srv := api.HTTPServer()
	served := make(chan error, 1)
	go func() { served <- srv.ListenAndServe() }()
	logger.Info("api started", "addr", apiCfg.Addr, "task_queue", cfg.TaskQueue, "temporal", cfg.TemporalAddress)

	select {
	case err := <-served:
		return fmt.Errorf("serve %s: %w", apiCfg.Addr, err)
	case err := <-listening:
		return fmt.Errorf("stock-change listener: %w", err)
	case <-ctx.Done():
	}
	logger.Info("stopping api")
	api.Drain()
	// The signal context is done; the grace period is a fresh budget.
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

// checkHealth asks the local api whether it is ready.
func checkHealth(addr string) error {
	if addr == "" {
		addr = httpapi.DefaultAddr
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("HTTP_ADDR %q: %w", addr, err)
	}
	// A wildcard listen address is reached on loopback.
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	c := &http.Client{Timeout: 3 * time.Second}
	resp, err := c.Get("http://" + net.JoinHostPort(host, port) + "/readyz")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("/readyz answered %s", resp.Status)
	}
	return nil
}
