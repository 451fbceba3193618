// Package httpapi is the flash sale's HTTP door for buyers, payment
// providers and operators. Every buy request passes the load-shedding gate
// (internal/edge) before it may start an order workflow; everything else
// talks to the workflow (internal/orders) or the stores directly.
//
// Errors are JSON {"code","message"}: every failure is a *flashsale.Error
// whose code is mapped to a status in one table (answers in errors.go); an
// error without a code is 500 INTERNAL with a generic message, the detail
// going to the log only.
package httpapi

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
	"go.temporal.io/sdk/client"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/internal/backend"
	"github.com/flashsale/flashsale/internal/edge"
	"github.com/flashsale/flashsale/internal/identity"
	"github.com/flashsale/flashsale/internal/inventory"
	"github.com/flashsale/flashsale/internal/orderdb"
	"github.com/flashsale/flashsale/internal/orders"
	"github.com/flashsale/flashsale/internal/redisguard"
	"github.com/flashsale/flashsale/internal/requestid"
)

// Deps are the services the API uses.
type Deps struct {
	Orders   *orders.Service
	Store    *orderdb.Store
	Stock    *inventory.Store
	Redis    redis.UniversalClient
	Temporal client.Client
	Logger   *slog.Logger
	// Guard tells whether Redis is reachable; while it is not, buy
	// requests are admitted on MySQL's stock (edge, "Redis down").
	Guard *redisguard.Guard
	// DegradedMaxInFlight is the edge's window per SKU while Redis is
	// down (DEGRADED_CONCURRENCY); zero means edge.DefaultDegradedMaxInFlight.
	DegradedMaxInFlight int64
	// Buyers verifies buyer tokens (built from Config.Identity by the
	// process, which owns the JWKS refresh's lifetime). Required.
	Buyers *identity.Verifier
}

// FromBackend takes the dependencies from open backend connections.
func FromBackend(b *backend.Backend) Deps {
	return Deps{
		Orders:   &orders.Service{Temporal: b.Temporal, TaskQueue: b.Config.TaskQueue, Orders: b.Orders, Logger: b.Logger},
		Store:    b.Orders,
		Stock:    b.Stock,
		Redis:    b.Redis,
		Temporal: b.Temporal,
		Logger:   b.Logger,
		Guard:    b.Guard,

		DegradedMaxInFlight: int64(b.Config.DegradedConcurrency),
	}
}

// Timeouts of the work a request waits for.
const (
	// placeTimeout covers Update-with-Start up to the reservation answer.
	// The workflow's reservation steps give up after 30 s (their local
	// activity budget), so waiting longer would only hold the connection.
	placeTimeout = 30 * time.Second
	// opTimeout bounds payments, cancels and reads. A payment whose
	// database write is stuck answers 503 and the provider retries; the
	// transaction id makes the retry safe.
	opTimeout = 10 * time.Second
	// readyTimeout: a dependency slower than this is not ready for buyers.
	readyTimeout = 2 * time.Second
)

// Server is the HTTP API. Create it with New, serve Handler (or
// HTTPServer), and keep Run running for the edge's stock-change listener.
type Server struct {
	cfg  Config
	deps Deps
	gate *edge.Gate
	// admit is the adaptive limit on new orders in flight into Temporal.
	admit    *admission
	log      *slog.Logger
	metrics  metrics
	prom     promMetrics
	recent   recentSKUs
	draining atomic.Bool
	handler  http.Handler
	// adminHash is SHA-256 of the admin token, compared in constant time.
	adminHash [sha256.Size]byte
}

// New builds the API. It refuses a config without secrets.
func New(deps Deps, cfg Config) (*Server, error) {
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("http api config: %w", err)
	}
	if deps.Buyers == nil {
		return nil, errors.New("http api: no buyer token verifier")
	}
	if cfg.WaitlistPerUnit == 0 {
		cfg.WaitlistPerUnit = DefaultWaitlistPerUnit
	}
	if deps.Logger == nil {
		deps.Logger = slog.Default()
	}
	s := &Server{
		cfg:  cfg,
		deps: deps,
		log:  deps.Logger,
		gate: edge.New(deps.Redis, deps.Stock, edge.Options{
			MaxInFlight: cfg.MaxInFlight, BuyRate: cfg.BuyRate, LocalTTL: cfg.LocalSoldOutTTL, Logger: deps.Logger,
			Guard: deps.Guard, DBAvailable: dbAvailable(deps.Store), DegradedMaxInFlight: deps.DegradedMaxInFlight,
		}),
		adminHash: sha256.Sum256([]byte(cfg.AdminToken)),
		prom:      newPromMetrics(),
		admit:     newAdmission(cfg.AdmissionMaxInFlight),
	}
	s.handler = s.routes()
	return s, nil
}

// dbAvailable is the edge's view of MySQL's stock while Redis is down.
func dbAvailable(store *orderdb.Store) func(context.Context, string) (int64, error) {
	if store == nil {
		return nil
	}
	return func(ctx context.Context, sku string) (int64, error) {
		// An unknown SKU keeps its UnknownSKU code through the wrap.
		inv, err := store.Inventory(ctx, sku)
		if err != nil {
			return 0, fmt.Errorf("mysql stock of %s: %w", sku, err)
		}
		return inv.Available, nil
	}
}

// Handler serves the API.
func (s *Server) Handler() http.Handler { return s.handler }

// Gate is the buy requests' load-shedding gate.
func (s *Server) Gate() *edge.Gate { return s.gate }

// Run keeps the edge's sold-out cache in step with stock changes on every
// instance, until ctx ends.
func (s *Server) Run(ctx context.Context) error { return s.gate.Run(ctx) }

// now is the clock signature timestamps are checked against.
func (s *Server) now() time.Time {
	if s.cfg.Now != nil {
		return s.cfg.Now()
	}
	return time.Now()
}

// Drain makes /readyz fail, so a load balancer stops sending new requests
// while the server shuts down.
func (s *Server) Drain() { s.draining.Store(true) }

// HTTPServer returns an http.Server for the API on cfg.Addr with timeouts
// for a public listener.
func (s *Server) HTTPServer() *http.Server {
	return &http.Server{
		Addr:    s.cfg.Addr,
		Handler: s.handler,
		// Slow-header clients (slowloris) are cut off early.
		ReadHeaderTimeout: 5 * time.Second,
		// Bodies are at most 64 KiB.
		ReadTimeout: 15 * time.Second,
		// Must exceed placeTimeout, or a buyer whose reservation took
		// long would lose the answer after the unit was taken.
		WriteTimeout:   placeTimeout + 10*time.Second,
		IdleTimeout:    2 * time.Minute,
		MaxHeaderBytes: 64 << 10,
		ErrorLog:       slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
}

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	route := func(path string, handlers map[string]http.HandlerFunc) {
		allow := make([]string, 0, len(handlers))
		for method, h := range handlers {
			mux.HandleFunc(method+" "+path, h)
			allow = append(allow, method)
		}
		slices.Sort(allow)
		// The method-less pattern is less specific, so it only catches the
		// other methods: a JSON 405 instead of the mux's plain-text one.
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Allow", strings.Join(allow, ", "))
			s.writeError(w, r, refuse(flashsale.MethodNotAllowed, "method not allowed; use "+strings.Join(allow, ", ")))
		})
	}
	route("/api/v1/orders", map[string]http.HandlerFunc{http.MethodPost: s.createOrder})
	route("/api/v1/orders/{id}", map[string]http.HandlerFunc{http.MethodGet: s.getOrder})
	route("/api/v1/orders/{id}/cancel", map[string]http.HandlerFunc{http.MethodPost: s.cancelOrder})
	route("/api/v1/payments/callback", map[string]http.HandlerFunc{http.MethodPost: s.paymentCallback})
	route("/api/v1/inventory/{sku}", map[string]http.HandlerFunc{http.MethodGet: s.getInventory})
	route("/api/v1/skus/{sku}/waitlist", map[string]http.HandlerFunc{http.MethodPost: s.joinWaitlist})
	route("/api/v1/skus/{sku}/waitlist/me", map[string]http.HandlerFunc{http.MethodGet: s.waitlistPlace})
	route("/api/v1/admin/skus/{sku}", map[string]http.HandlerFunc{http.MethodPut: s.admin(s.putSKU)})
	route("/api/v1/admin/skus/{sku}/preheat", map[string]http.HandlerFunc{http.MethodPost: s.admin(s.preheat)})
	route("/api/v1/admin/skus/{sku}/restock", map[string]http.HandlerFunc{http.MethodPost: s.admin(s.restock)})
	route("/api/v1/admin/skus/{sku}/buckets", map[string]http.HandlerFunc{http.MethodPost: s.admin(s.resizeBuckets)})
	route("/healthz", map[string]http.HandlerFunc{http.MethodGet: s.healthz})
	route("/readyz", map[string]http.HandlerFunc{http.MethodGet: s.readyz})
	route("/metrics", map[string]http.HandlerFunc{http.MethodGet: s.getMetrics})
	sale := newSaleBoard(s) // the live sale page (salepage.go)
	route("/sale/{sku}", map[string]http.HandlerFunc{http.MethodGet: sale.page})
	route("/static/sale/{file}", map[string]http.HandlerFunc{http.MethodGet: sale.asset})
	route("/api/v1/skus/{sku}/live", map[string]http.HandlerFunc{http.MethodGet: sale.live})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.writeError(w, r, &flashsale.Error{Code: flashsale.NotFound})
	})
	return s.middleware(mux)
}

// statusClientClosed is nginx's 499 "client closed request": the client
// hung up before its answer was ready, so none was sent. It appears in the
// access log and the metrics, never on the wire.
const statusClientClosed = 499

// middleware counts answers by status, writes the access log, sets headers
// every answer needs and turns a panic into a logged 500 instead of a
// dropped connection.
func (s *Server) middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &statusRecorder{ResponseWriter: w}
		start := time.Now()
		// r is replaced, not shadowed: the deferred logging below must see
		// the request the mux filled in (its Pattern).
		id := r.Header.Get(requestIDHeader)
		if !flashsale.ValidID(id, maxRequestIDLength) {
			id = uuid.NewString()
		}
		w.Header().Set(requestIDHeader, id)
		// requestid carries it on to the order workflow's logs (a Temporal
		// context propagator, internal/backend).
		r = r.WithContext(requestid.NewContext(r.Context(), id))
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				s.log.ErrorContext(r.Context(), "handler panic", "panic", p, "stack", string(debug.Stack()))
				if rec.status == 0 {
					s.writeError(rec, r, fmt.Errorf("panic: %v", p))
				}
			}
			status := rec.status
			if status == 0 && r.Context().Err() != nil {
				status = statusClientClosed
			}
			if status == 0 {
				status = http.StatusOK
			}
			took := time.Since(start)
			s.metrics.count(status)
			s.prom.observeRequest(r, status, took)
			s.accessLog(r, status, took)
		}()
		h := w.Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Cache-Control", "no-store")
		next.ServeHTTP(rec, r)
	})
}

// accessLog writes one line per request. Ordinary answers are DEBUG (a
// flood is millions of lines); a client that hung up is INFO, once, because
// it is the client's doing, not a failure (those are logged at ERROR where
// they happen).
func (s *Server) accessLog(r *http.Request, status int, took time.Duration) {
	level, msg := slog.LevelDebug, "request"
	if status == statusClientClosed {
		level, msg = slog.LevelInfo, "client closed request"
	}
	s.log.Log(r.Context(), level, msg, "method", r.Method, "path", r.URL.Path, "status", status,
		"duration_ms", took.Milliseconds(), "request_id", requestID(r))
}

// requestIDHeader names a request in the logs of every hop: taken from the
// caller (a load balancer or the client) when it is a sane token, minted
// otherwise, and echoed in the answer, so a buyer's complaint quoting it
// finds the log lines.
const requestIDHeader = "X-Request-Id"

// maxRequestIDLength bounds a caller's request id; a longer one is replaced.
const maxRequestIDLength = 128

// requestID is the id the middleware gave r.
func requestID(r *http.Request) string { return requestid.FromContext(r.Context()) }

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection.
func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

func (s *Server) writeJSON(w http.ResponseWriter, r *http.Request, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		s.log.ErrorContext(r.Context(), "encode response", "path", r.URL.Path, "error", err)
		status = http.StatusInternalServerError
		body = []byte(`{"code":"INTERNAL","message":"internal error"}`)
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	if _, err := w.Write(append(body, '\n')); err != nil {
		// The client went away; nothing left to tell it.
		s.log.DebugContext(r.Context(), "write response", "path", r.URL.Path, "error", err)
	}
}

// isAdmin reports whether token is the operators' bearer token.
func (s *Server) isAdmin(token string) bool {
	// Comparing hashes keeps the time independent of the token's length
	// as well as its content.
	got := sha256.Sum256([]byte(token))
	return token != "" && subtle.ConstantTimeCompare(got[:], s.adminHash[:]) == 1
}

// admin guards operator endpoints with the bearer token.
func (s *Server) admin(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !s.isAdmin(identity.BearerToken(r.Header.Get("Authorization"))) {
			s.writeError(w, r, &flashsale.Error{Code: flashsale.Unauthorized})
			return
		}
		h(w, r)
	}
}

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	s.writeJSON(w, r, http.StatusOK, map[string]string{"status": "ok"})
}

// readyz checks, in parallel, that Temporal, Redis and MySQL answer within
// readyTimeout. The failed ones are named; why they failed is logged.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	if s.draining.Load() {
		s.writeError(w, r, refuse(flashsale.Unavailable, "shutting down"))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
	defer cancel()
	checks := []struct {
		name string
		fn   func(context.Context) error
	}{
		{"temporal", func(ctx context.Context) error {
			_, err := s.deps.Temporal.CheckHealth(ctx, &client.CheckHealthRequest{})
			return err
		}},
		{"mysql", s.deps.Store.Ping},
	}
	// Redis is not among them: without it buyers are served in degraded
	// mode (MySQL alone), and taking every instance out of the load
	// balancer would turn a slow sale into no sale. The answer says so.
	var redisErr error
	errs := make([]error, len(checks))
	var wg sync.WaitGroup
	wg.Go(func() { redisErr = s.deps.Redis.Ping(ctx).Err() })
	for i, c := range checks {
		wg.Go(func() { errs[i] = c.fn(ctx) })
	}
	wg.Wait()
	var failed []string
	for i, err := range errs {
		if err != nil {
			failed = append(failed, checks[i].name)
			s.log.WarnContext(r.Context(), "not ready", "dependency", checks[i].name, "error", err)
		}
	}
	if len(failed) > 0 {
		s.writeError(w, r, refuse(flashsale.Unavailable, "not ready: "+strings.Join(failed, ", ")+" unreachable"))
		return
	}
	if redisErr != nil {
		s.log.WarnContext(r.Context(), "redis unreachable: serving degraded", "error", redisErr)
		s.writeJSON(w, r, http.StatusOK, map[string]string{"status": "degraded", "redis": "unreachable"})
		return
	}
	s.writeJSON(w, r, http.StatusOK, map[string]string{"status": "ready"})
}

// metrics are the API's counters; /metrics adds the edge's.
type metrics struct {
	workflowsStarted atomic.Int64
	statuses         [600]atomic.Int64
}

func (m *metrics) count(status int) {
	if status == 0 {
		status = http.StatusOK
	}
	if status > 0 && status < len(m.statuses) {
		m.statuses[status].Add(1)
	}
}

// MetricsSnapshot is what GET /metrics returns.
type MetricsSnapshot struct {
	// WorkflowsStarted counts Update-with-Start calls for new orders (not
	// repeats of placed ones): an upper bound on order workflows started.
	WorkflowsStarted int64            `json:"workflows_started"`
	Responses        map[string]int64 `json:"responses"`
	Edge             edge.Stats       `json:"edge"`
}

// Metrics returns the counters since start.
func (s *Server) Metrics() MetricsSnapshot {
	out := MetricsSnapshot{WorkflowsStarted: s.metrics.workflowsStarted.Load(), Responses: map[string]int64{}, Edge: s.gate.Stats()}
	for code := range s.metrics.statuses {
		if n := s.metrics.statuses[code].Load(); n > 0 {
			out.Responses[strconv.Itoa(code)] = n
		}
	}
	return out
}

func (s *Server) getMetrics(w http.ResponseWriter, r *http.Request) {
	s.writeJSON(w, r, http.StatusOK, s.Metrics())
}
