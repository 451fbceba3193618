// Command worker runs the order workflows and activities. Configuration
// comes from the environment (see internal/config); it migrates MySQL on
// start, creates the order workflow's search attributes when the namespace
// lacks them (or exits naming them, when it may not), and stops gracefully
// on SIGINT/SIGTERM, finishing the tasks it holds. With METRICS_ADDR set it
// serves Prometheus metrics there: the Temporal SDK's (task latencies,
// schedule-to-start, sticky cache, pollers), the orders its activities
// moved to each status, its Redis circuit breaker, and the backlogs left
// for a person (stalled orders, payments to refund), and the worker's
// probes: /healthz and /readyz (internal/app/workerhealth.go). `worker -help`
// prints the environment and exits; `worker -version` prints the build
// (internal/buildinfo) and exits.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"

	"go.temporal.io/sdk/interceptor"

	"github.com/flashsale/flashsale/internal/app"
	"github.com/flashsale/flashsale/internal/backend"
	"github.com/flashsale/flashsale/internal/config"
	"github.com/flashsale/flashsale/internal/metrics"
)

// extraInterceptors is empty in a production build. The fault-injection
// build (tag "faults", see lostreply_faults.go) fills it from its init.
var extraInterceptors []interceptor.WorkerInterceptor

const usage = `usage: worker [-healthcheck] [-version]

Runs the order workflows and activities on TASK_QUEUE until SIGINT/SIGTERM.
Migrates MySQL and creates the order workflow's search attributes on start.
With METRICS_ADDR set, its listener also answers GET /healthz (the process
is alive) and GET /readyz (200 while Temporal sees this worker polling its
task queue for workflow and activity tasks; 503 UNAVAILABLE otherwise).
-healthcheck GETs /readyz of a running worker on METRICS_ADDR and exits 0 if
it is ready (for container health checks: the image has no curl).
-version prints the build (module version, VCS revision) and exits.

%s%s`

func main() {
	version := flag.Bool("version", false, "print the build and exit")
	healthcheck := flag.Bool("healthcheck", false, "check /readyz of a running worker on METRICS_ADDR and exit")
	flag.Usage = func() { fmt.Fprintf(os.Stdout, usage, backend.EnvHelp, backend.MetricsEnvHelp) }
	// -help prints usage and exits 0 (flag.ExitOnError), before anything
	// is read or connected; any argument is a mistake.
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "worker takes no arguments, got %q\n", flag.Args())
		flag.Usage()
		os.Exit(2)
	}
	app.Main("worker", *version, *healthcheck, checkHealth, open)
}

// checkHealth asks the running worker's metrics listener whether it is
// ready.
func checkHealth() error {
	addr := os.Getenv(metrics.AddrEnv)
	if addr == "" {
		return errors.New("METRICS_ADDR is not set, so the worker serves no /readyz")
	}
	return app.CheckReady(addr)
}

func open(ctx context.Context, cfg config.Config, logger *slog.Logger) (app.Process, error) {
	return app.OpenWorker(ctx, cfg, logger, app.WorkerOptions{
		MetricsAddr: os.Getenv(metrics.AddrEnv), Interceptors: extraInterceptors,
	})
}
