// Command api serves the flash sale's HTTP API (internal/httpapi).
//
// Configuration comes from the environment: the services like the worker
// (internal/config), plus HTTP_ADDR (default :8080), WEBHOOK_SECRET (comma
// separated, newest first), ADMIN_TOKEN and BUYER_JWT_SECRET or
// BUYER_JWKS_URL (internal/identity), which have no defaults, and
// optionally HTTP_READ_TIMEOUT, HTTP_H2C, BUYER_JWT_AUDIENCE, BUYER_JWT_ISSUER, BUYER_TOKEN_CACHE_SIZE, BUY_RATE_PER_USER,
// ORDER_RATE_PER_USER, EDGE_MAX_IN_FLIGHT, WAITLIST_PER_UNIT and METRICS_ADDR (Prometheus
// metrics on a listener of their own; off when unset). On SIGINT/SIGTERM it
// fails /readyz, stops accepting connections and lets in-flight requests
// finish.
//
//	api               serve
//	api -healthcheck  GET /readyz on HTTP_ADDR; exit 0 if ready (for
//	                  container health checks: the image has no curl)
//	api -help         print the flags and the environment, and exit
//	api -version      print the build (internal/buildinfo) and exit
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/flashsale/flashsale/internal/app"
	"github.com/flashsale/flashsale/internal/backend"
	"github.com/flashsale/flashsale/internal/config"
	"github.com/flashsale/flashsale/internal/httpapi"
	"github.com/flashsale/flashsale/internal/metrics"
)

const usage = `usage: api [-healthcheck] [-version]

Serves the flash sale's HTTP API (buyers, payment callbacks, operators).

flags:
%s

%s%s
environment (api):
  HTTP_ADDR             public listener (default :8080)
  HTTP_READ_TIMEOUT     time to read a request's headers and body (default 15s); past it: 408 REQUEST_TIMEOUT
  HTTP_H2C              true: serve HTTP/2 without TLS too (prior knowledge), e.g. for queue long polls (default false)
  WEBHOOK_SECRET        payment callback HMAC secrets, comma-separated, newest first (required, >= 16 chars each)
  ADMIN_TOKEN           operators' bearer token (required, >= 16 chars)
  BUYER_JWT_SECRET      HS256 key of buyer tokens (>= 32 bytes), or
  BUYER_JWKS_URL        the identity provider's JWKS (one of the two is required)
  BUYER_JWT_AUDIENCE    expected aud of buyer tokens (optional)
  BUYER_JWT_ISSUER      expected iss of buyer tokens (optional)
  BUYER_TOKEN_CACHE_SIZE  verified buyer tokens remembered per instance (default 10000; 0: off)
  BUY_RATE_PER_USER     buy requests per second per user (default 5)
  ORDER_RATE_PER_USER   order reads and cancels per second per user (default 10)
  EDGE_MAX_IN_FLIGHT    units of one SKU on their way through Temporal per instance (default 16)
  SALE_PASSES_PER_INSTANCE  this instance's share of a queued sale's passes outstanding
                        (default 4 x EDGE_MAX_IN_FLIGHT)
  ADMISSION_MAX_IN_FLIGHT  ceiling of the adaptive limit on new orders in flight into Temporal
                        per instance (default 256); past the limit: 429 BUSY at once
  ADMISSION_TARGET_LATENCY  cap new orders in flight at throughput x this (default 300ms; off)
  ADMISSION_THROUGHPUT  new orders/s Temporal completes for this instance (default: learned)
  ADMISSION_MAX_RETRY_AFTER  longest Retry-After of a 429 BUSY while saturated (default 10s; 1s: fixed)
  WAITLIST_PER_UNIT     waitlist places per unit of stock (default 3)
`

func main() {
	healthcheck := flag.Bool("healthcheck", false, "check /readyz of a running api on HTTP_ADDR and exit")
	version := flag.Bool("version", false, "print the build (module version, VCS revision) and exit")
	flag.Usage = func() {
		var flags strings.Builder
		flag.CommandLine.SetOutput(&flags)
		flag.PrintDefaults()
		fmt.Fprintf(os.Stdout, usage, strings.TrimRight(flags.String(), "\n"), backend.EnvHelp, backend.MetricsEnvHelp)
	}
	// -help prints usage and exits 0 (flag.ExitOnError), before anything
	// is read or connected.
	flag.Parse()
	app.Main("api", *version, *healthcheck, checkHealth, open)
}

// open reads the API's own configuration, after the shared one, and opens
// the API.
func open(ctx context.Context, cfg config.Config, logger *slog.Logger) (app.Process, error) {
	apiCfg, err := httpapi.LoadConfig(os.Getenv)
	if err != nil {
		return nil, fmt.Errorf("load api config: %w", err)
	}
	return app.OpenAPI(ctx, cfg, apiCfg, logger, app.APIOptions{MetricsAddr: os.Getenv(metrics.AddrEnv)})
}

// checkHealth asks the local api whether it is ready.
func checkHealth() error {
	addr := os.Getenv("HTTP_ADDR")
	if addr == "" {
		addr = httpapi.DefaultAddr
	}
	return app.CheckReady(addr)
}
