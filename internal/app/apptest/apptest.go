// Package apptest gives a test a running flash sale, built the way the
// processes are (internal/app): connections to the real Redis, MySQL and
// Temporal, a fresh database and a task queue of its own, an in-process
// worker with every workflow and activity registered (app.NewWorker), and
// on request the HTTP API (app.NewHTTPAPI) on a test listener. It is to
// internal/app what net/http/httptest is to net/http:
//
//	sys := apptest.Start(t, apptest.Options{Name: "audit-test"})
//	sys.Orders.PutSKU(ctx, ...) // sys.Stock, sys.Temporal, sys.Redis, sys.Config
//
// A test that needs something else from the system asks for it here
// rather than connecting by hand, so every test runs the registrations and
// settings the worker and the API run.
//
// It is a package of its own, not part of internal/testenv, because it
// imports internal/app, and app imports the stores (inventory, orderdb,
// backend, ...) whose in-package tests import testenv: testenv importing
// app would close a cycle. Nothing but tests imports apptest.
package apptest

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"testing"
	"time"

	"go.temporal.io/sdk/worker"

	"github.com/flashsale/flashsale/internal/app"
	"github.com/flashsale/flashsale/internal/backend"
	"github.com/flashsale/flashsale/internal/config"
	"github.com/flashsale/flashsale/internal/httpapi"
	"github.com/flashsale/flashsale/internal/testenv"
)

// Options shape the system Start builds. The zero value is a system with a
// worker and no HTTP API.
type Options struct {
	// Name begins the task queue's name (Name-ID); "test" when empty.
	Name string
	// PaymentTimeout is the worker's default pay-by; 15 minutes when zero.
	PaymentTimeout time.Duration
	// WorkerConcurrency caps the worker's concurrent tasks; 16 when zero.
	WorkerConcurrency int
	// Logger receives the system's logs (the worker's, the clients'); they
	// are discarded when nil.
	Logger *slog.Logger
	// NoWorker leaves the worker out: the orders of a system without one
	// get no workflow task until StartWorker.
	NoWorker bool
	// Workflows are registered on the worker beside the flash sale's own
	// (the bench's ceiling workflow).
	Workflows []any
	// Register, when set, registers more on each worker the system starts,
	// with its backend at hand (the bench's order-shape workflows and their
	// activities).
	Register func(worker.Registry, *backend.Backend)
	// API, when set, is the HTTP API's configuration: Start serves the API
	// on a test listener (System.API), as ServeAPI does.
	API *httpapi.Config
}

// System is a running flash sale. Its embedded Backend holds the clients
// and stores (Config, Temporal, Redis, Stock, Orders, Guard, Logger).
type System struct {
	*backend.Backend
	// ID is unique to the system: the task queue ends with it, and tests
	// begin their SKU and order ids with it so runs never collide.
	ID string
	// Worker is the in-process worker; nil with Options.NoWorker or after
	// StopWorker.
	Worker worker.Worker
	// API is the HTTP API when Options.API was set.
	API *API

	t         testing.TB
	workflows []any
	register  func(worker.Registry, *backend.Backend)
}

// API is an HTTP API instance served on a test listener.
type API struct {
	*httpapi.Server
	// URL is the listener's base URL (http://127.0.0.1:port).
	URL string
}

// Start builds a system on the shared services for t and stops it when t
// ends. A missing service fails t: tests never skip.
func Start(t testing.TB, opts Options) *System {
	t.Helper()
	if opts.Name == "" {
		opts.Name = "test"
	}
	if opts.PaymentTimeout == 0 {
		opts.PaymentTimeout = 15 * time.Minute
	}
	if opts.WorkerConcurrency == 0 {
		opts.WorkerConcurrency = 16
	}
	id := testenv.UniqueID(t)
	cfg := config.Config{
		TemporalAddress:   testenv.TemporalAddress(),
		TemporalNamespace: config.DefaultNamespace,
		TaskQueue:         opts.Name + "-" + id,
		RedisAddr:         testenv.RedisAddr(),
		MySQLDSN:          testenv.MySQLDSN(t),
		PaymentTimeout:    opts.PaymentTimeout,
		WorkerConcurrency: opts.WorkerConcurrency,
		UserIDKey:         []byte("apptest-user-id-key-" + id),
	}
	s := &System{ID: id, t: t, workflows: opts.Workflows, register: opts.Register}
	s.Backend = s.Connect(cfg, opts.Logger)
	// The go/no-go before a sale's open looks for it (app.Preflight);
	// paused, it never runs on this test's task queue after the test.
	if err := app.EnsureReconcileSchedule(t.Context(), s.Backend, time.Hour, true); err != nil {
		t.Fatal(err)
	}
	if !opts.NoWorker {
		s.StartWorker()
		t.Cleanup(s.StopWorker)
	}
	if opts.API != nil {
		s.API = s.ServeAPI(*opts.API)
	}
	return s
}

// Open connects to cfg's services as a process started with cfg would,
// with no worker, for a suite that runs its own services and binaries (the
// fault and scale-out suites' checker) or tests the connections
// themselves. Unlike Start it returns the error, since those services may
// be down on purpose. The caller closes the system; its methods that
// start things (Connect, StartWorker, ServeAPI) are for systems from Start.
func Open(ctx context.Context, cfg config.Config, logger *slog.Logger) (*System, error) {
	b, err := backend.Connect(ctx, cfg, orDiscard(logger))
	if err != nil {
		return nil, err
	}
	return &System{Backend: b}, nil
}

// Connect opens another set of connections with cfg (the system's
// Config, changed as a test needs: another task queue), as another
// process would, closed when the test ends. logger nil discards.
func (s *System) Connect(cfg config.Config, logger *slog.Logger) *backend.Backend {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, err := backend.Connect(ctx, cfg, orDiscard(logger))
	if err != nil {
		s.t.Fatalf("Temporal, Redis and MariaDB are required (scripts/services.sh starts them): %v", err)
	}
	s.t.Cleanup(b.Close)
	return b
}

// StartWorker starts a worker on the system's task queue (app.NewWorker,
// with Options.Workflows), as a worker process would.
func (s *System) StartWorker() {
	s.t.Helper()
	w := app.NewWorker(s.Backend)
	for _, wf := range s.workflows {
		w.RegisterWorkflow(wf)
	}
	if s.register != nil {
		s.register(w, s.Backend)
	}
	if err := w.Start(); err != nil {
		s.t.Fatalf("start worker: %v", err)
	}
	s.Worker = w
}

// StopWorker stops the worker, if one runs, as a worker going away would:
// orders get no workflow task until StartWorker.
func (s *System) StopWorker() {
	if s.Worker != nil {
		s.Worker.Stop()
		s.Worker = nil
	}
}

// ServeAPI builds an HTTP API instance on the system's connections
// (app.NewHTTPAPI, verifying buyers as cfg.Identity says), runs its
// stock-change listener and serves it on a test listener until the test
// ends. It returns once the sold-out cache hears stock changes: before
// that, a subscription landing would clear the cache and make a test's
// counts racy.
func (s *System) ServeAPI(cfg httpapi.Config) *API {
	s.t.Helper()
	srv, err := app.NewHTTPAPI(context.Background(), s.Backend, cfg)
	if err != nil {
		s.t.Fatalf("build the HTTP API: %v", err)
	}
	return Serve(s.t, srv, true)
}

// Serve runs srv's stock-change listener and serves it on a test listener
// until t ends, for an API a test built itself (fake dependencies); with
// waitSubscribed it returns once the sold-out cache hears stock changes.
// The listener must stop cleanly.
func Serve(t testing.TB, srv *httpapi.Server, waitSubscribed bool) *API {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(func() {
		ts.Close()
		cancel()
		if err := <-done; err != nil {
			t.Errorf("stock-change listener: %v", err)
		}
	})
	if waitSubscribed {
		deadline := time.Now().Add(5 * time.Second)
		for !srv.Gate().Stats().Subscribed {
			if time.Now().After(deadline) {
				t.Fatalf("the API's stock-change listener did not subscribe within 5s")
			}
			time.Sleep(time.Millisecond)
		}
	}
	return &API{Server: srv, URL: ts.URL}
}

// Close closes the connections of a system from Open (Start's close
// themselves when the test ends).
func (s *System) Close() { s.Backend.Close() }

func orDiscard(l *slog.Logger) *slog.Logger {
	if l == nil {
		return slog.New(slog.DiscardHandler)
	}
	return l
}
