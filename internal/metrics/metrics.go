// Package metrics exposes a flashsale process to Prometheus: one registry
// per process, served on a listener of its own (METRICS_ADDR), never on the
// public port, so a scrape neither competes with buyers nor is reachable by
// them. The Temporal SDK's own metrics (task latencies, schedule-to-start,
// sticky cache, pollers) reach the same registry through the SDK's
// OpenTelemetry metrics handler and OTel's Prometheus exporter.
//
// Names follow Prometheus's conventions: flashsale_ for the application's
// own metrics, temporal_ for the SDK's; base units (seconds), _total on
// counters, and labels of bounded cardinality only (route patterns, never
// raw paths; SKUs only from a capped set; never order or user ids).
package metrics

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"runtime"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.temporal.io/sdk/client"
	temporalotel "go.temporal.io/sdk/contrib/opentelemetry"
)

// Namespace prefixes the application's own metric names.
const Namespace = "flashsale"

// AddrEnv names the environment variable holding the metrics listener's
// address. Unset or empty disables the listener: several processes on one
// host (tests, the fault suite, a local cluster) would otherwise fight over
// one default port.
const AddrEnv = "METRICS_ADDR"

// Path is where the listener answers in Prometheus text format.
const Path = "/metrics"

// NewRegistry returns a registry with the Go runtime and process
// collectors, which every process wants (goroutines, GC pauses, RSS, open
// file descriptors).
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return reg
}

// LatencyBuckets are the histogram bounds, in seconds, for request and
// task latencies: from a sold-out answer out of the in-process cache (well
// under a millisecond) to a reservation queued behind a loaded Temporal
// server (seconds), up to the API's 30 s placement timeout.
var LatencyBuckets = []float64{
	0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30,
}

// TemporalHandler returns a Temporal SDK metrics handler whose metrics
// land in reg. Give it to client.Options.MetricsHandler: the client's and
// every worker's metrics (they inherit the client's handler) then appear
// in reg as temporal_*, timers as histograms in seconds.
func TemporalHandler(reg prometheus.Registerer, logger *slog.Logger) (client.MetricsHandler, error) {
	exporter, err := otelprom.New(
		otelprom.WithRegisterer(reg),
		// The SDK's timers are in seconds; OTel's default bounds are
		// meant for milliseconds and would put every task in one bucket.
		otelprom.WithAggregationSelector(func(k sdkmetric.InstrumentKind) sdkmetric.Aggregation {
			if k == sdkmetric.InstrumentKindHistogram {
				return sdkmetric.AggregationExplicitBucketHistogram{Boundaries: LatencyBuckets}
			}
			return sdkmetric.DefaultAggregationSelector(k)
		}),
		// One process, one resource: target_info and otel_scope_* labels
		// would only add series Prometheus's own job/instance labels give.
		otelprom.WithoutTargetInfo(),
		otelprom.WithoutScopeInfo(),
	)
	if err != nil {
		return nil, fmt.Errorf("temporal metrics exporter: %w", err)
	}
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter))
	if logger == nil {
		logger = slog.Default()
	}
	return temporalotel.NewMetricsHandler(temporalotel.MetricsHandlerOptions{
		Meter: provider.Meter("temporal-sdk-go"),
		// The SDK's counters only ever grow: as monotonic counters they
		// are exported as Prometheus counters (_total), so rate() works.
		UseMonotonicCounters: true,
		// The default panics; a metric the meter refuses is not worth a
		// worker.
		OnError: func(err error) { logger.Warn("temporal metric", "error", err) },
	}), nil
}

// Server is a running metrics listener.
type Server struct {
	srv *http.Server
	mux *http.ServeMux
	ln  net.Listener
	// done receives Serve's result.
	done chan error
}

// Listen starts serving reg on addr (":0" picks a free port; Addr tells
// which). Close stops it.
func Listen(addr string, reg *prometheus.Registry, logger *slog.Logger) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics listener %s: %w", addr, err)
	}
	if logger == nil {
		logger = slog.Default()
	}
	mux := http.NewServeMux()
	mux.Handle("GET "+Path, promhttp.HandlerFor(reg, promhttp.HandlerOpts{
		ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
		// A collector that failed (Redis slow during a scrape) leaves its
		// metrics out; the rest of the scrape still answers.
		ErrorHandling: promhttp.ContinueOnError,
		// A scrape must not pile up behind slow ones.
		MaxRequestsInFlight: 4,
		Timeout:             10 * time.Second,
	}))
	s := &Server{
		srv: &http.Server{
			Handler:           mux,
			ReadHeaderTimeout: 5 * time.Second,
			WriteTimeout:      15 * time.Second,
			ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
		},
		mux:  mux,
		ln:   ln,
		done: make(chan error, 1),
	}
	go func() { s.done <- s.srv.Serve(ln) }()
	return s, nil
}

// Addr is the address the listener is bound to.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Handle serves h at pattern beside the metrics (a worker's health
// probes); safe while the listener serves.
func (s *Server) Handle(pattern string, h http.Handler) { s.mux.Handle(pattern, h) }

// Close stops the listener, letting a scrape under way finish within ctx.
func (s *Server) Close(ctx context.Context) error {
	if s == nil {
		return nil
	}
	err := s.srv.Shutdown(ctx)
	if serr := <-s.done; !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	return err
}

// Process is one process's metrics: the registry, the Temporal SDK
// handler feeding it, and the listener serving it.
type Process struct {
	Registry *prometheus.Registry
	// Temporal goes to backend.WithTemporalMetrics.
	Temporal client.MetricsHandler
	srv      *Server
	logger   *slog.Logger
}

// Start serves a new registry on addr, or returns nil when addr is empty
// (metrics off). It listens before the process connects to anything, so a
// port already taken fails the start instead of a scrape later.
func Start(addr string, logger *slog.Logger) (*Process, error) {
	if addr == "" {
		return nil, nil
	}
	if logger == nil {
		logger = slog.Default()
	}
	reg := NewRegistry()
	th, err := TemporalHandler(reg, logger)
	if err != nil {
		return nil, err
	}
	srv, err := Listen(addr, reg, logger)
	if err != nil {
		return nil, err
	}
	logger.Info("metrics listening", "addr", srv.Addr(), "path", Path)
	return &Process{Registry: reg, Temporal: th, srv: srv, logger: logger}, nil
}

// Addr is the listener's address.
func (p *Process) Addr() string { return p.srv.Addr() }

// Handle serves h at pattern on the metrics listener.
func (p *Process) Handle(pattern string, h http.Handler) { p.srv.Handle(pattern, h) }

// ProfilesEnv names the environment variable that, set to true, adds Go's
// profiles (/debug/pprof/) to the metrics listener, with block and mutex
// sampling on: the lab's bench reads where a sale's processes wait. Off by
// default, as sampling costs every blocking call a little.
const ProfilesEnv = "METRICS_PPROF"

// ServeProfiles serves /debug/pprof/ on the listener and samples one
// blocking event per 100 µs blocked and one contended mutex in 10 (the
// rates the bench uses in its own process).
func (p *Process) ServeProfiles() {
	runtime.SetBlockProfileRate(100_000)
	runtime.SetMutexProfileFraction(10)
	p.Handle("GET /debug/pprof/", http.HandlerFunc(pprof.Index))
	p.Handle("GET /debug/pprof/profile", http.HandlerFunc(pprof.Profile))
}

// Close stops the listener, giving a scrape under way a few seconds.
func (p *Process) Close() {
	if p == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := p.srv.Close(ctx); err != nil {
		p.logger.Warn("close metrics listener", "error", err)
	}
}
