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
	"cmp"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"go.temporal.io/sdk/client"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/internal/backend"
	"github.com/flashsale/flashsale/internal/buying"
	"github.com/flashsale/flashsale/internal/edge"
	"github.com/flashsale/flashsale/internal/identity"
	"github.com/flashsale/flashsale/internal/inventory"
	fsmetrics "github.com/flashsale/flashsale/internal/metrics"
	"github.com/flashsale/flashsale/internal/orderdb"
	"github.com/flashsale/flashsale/internal/orders"
	"github.com/flashsale/flashsale/internal/queueing"
	"github.com/flashsale/flashsale/internal/redisguard"
	"github.com/flashsale/flashsale/internal/sale"
	"github.com/flashsale/flashsale/internal/saletraffic"
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
	// RedisEviction is the readiness probe's check that Redis cannot evict
	// a sale's keys (backend.Backend.CheckEviction, the override applied,
	// a pass trusted for backend.EvictionRecheck: backend.CachedEviction):
	// an error backend.IsEviction says is not ready. Nil: not checked (a
	// test's fakes).
	RedisEviction func(context.Context) error
	// Buyers verifies buyer tokens (built from Config.Identity by the
	// process, which owns the JWKS refresh's lifetime). Required.
	Buyers *identity.Verifier
}

// FromBackend takes the dependencies from open backend connections.
func FromBackend(b *backend.Backend) Deps {
	return Deps{
		Orders: &orders.Service{Temporal: b.Temporal, TaskQueue: b.Config.TaskQueue, Orders: b.Orders, Logger: b.Logger,
			UserIDKey: b.Config.UserIDKey, FairnessBySKU: b.Config.FairnessBySKU},
		Store:    b.Orders,
		Stock:    b.Stock,
		Redis:    b.Redis,
		Temporal: b.Temporal,
		Logger:   b.Logger,
		Guard:    b.Guard,

		RedisEviction:       backend.CachedEviction(b.CheckEviction, time.Now),
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
	// placements is the adaptive limit on new orders in flight into
	// Temporal.
	placements *edge.PlacementLimit
	// buying is the buy use case behind POST /api/v1/orders.
	buying *buying.Service
	// queueing is the queue's use cases behind its routes (queue.go).
	queueing *queueing.Service
	// sales is the fair sales' store and passes, for the buy's check,
	// the sale page and the waitlist.
	sales *sale.Door
	// waits holds the long polls of queue/me (?wait=).
	waits   *sale.Waits
	log     *slog.Logger
	metrics metrics
	prom    promMetrics
	// quick are the quick sold-out answer's instruments (quick.go).
	quick  quickMetrics
	recent recentSKUs
	// traffic counts each SKU's buy answers for the live sale page, shared
	// by every instance through Redis (saletraffic).
	traffic *saletraffic.Counter
	// stock caches GET /api/v1/inventory/{sku}'s public answers.
	stock    *snapshots[inventoryResponse]
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
	if cfg.OrderRate <= 0 {
		cfg.OrderRate = edge.DefaultOrderRate
	}
	if deps.Logger == nil {
		deps.Logger = slog.Default()
	}
	s := &Server{
		cfg:       cfg,
		deps:      deps,
		log:       deps.Logger,
		adminHash: sha256.Sum256([]byte(cfg.AdminToken)),
		prom:      newPromMetrics(),
		placements: edge.NewPlacementLimit(edge.PlacementOptions{
			Max: cfg.AdmissionMaxInFlight, Target: cfg.AdmissionTargetLatency, Throughput: cfg.AdmissionThroughput,
			MaxRetryAfter: cfg.AdmissionMaxRetryAfter,
		}),
	}
	s.gate = edge.New(deps.Redis, deps.Stock, edge.Options{
		MaxInFlight: cfg.MaxInFlight, BuyRate: cfg.BuyRate, LocalTTL: cfg.LocalSoldOutTTL, Logger: deps.Logger,
		Guard: deps.Guard, DBAvailable: dbAvailable(deps.Store), DegradedMaxInFlight: deps.DegradedMaxInFlight,
		Placements: s.placements,
	})
	// Every look at a queue through this instance publishes its share of
	// the sale's passes outstanding (SalePasses, by default
	// DefaultSalePassWindows of its per-SKU window): the passes outstanding stay below the instances' shares
	// summed, and a pass holder is let past the window (edge.Request.Pass).
	passes := cfg.SalePasses
	if passes <= 0 {
		window := cfg.MaxInFlight
		if window <= 0 {
			window = edge.DefaultMaxInFlight // the gate's default too
		}
		passes = DefaultSalePassWindows * window
	}
	s.sales = sale.NewDoor(sale.New(deps.Redis, s.unitsLeft).WithCapacity(passes, 0), sale.NewSigner(cfg.AdminToken),
		saleQueued(deps.Store))
	s.waits = sale.NewWaits(s.sales.Store(), sale.DefaultWaitEvery, s.log)
	s.buying = &buying.Service{Gate: s.gate, Orders: deps.Orders, Recorder: buyMetrics{s},
		Sales: s.sales, Logger: deps.Logger}
	s.queueing = &queueing.Service{Gate: s.gate, Door: s.sales, Waits: s.waits, LookTimeout: opTimeout}
	s.stock = newSnapshots(stockMaxCached, errStockBusy, s.readStock)
	s.quick = newQuickMetrics(s.prom)
	s.traffic = saletraffic.New(deps.Redis, fsmetrics.LatencyBuckets)
	// The quick sold-out answer comes before everything else, the
	// middleware included (quick.go).
	s.handler = s.quickSoldOut(s.routes())
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

// saleQueued is the buy's check's view of which SKUs are queued while
// Redis does not answer: MySQL's (nil without a store: none is proved
// unqueued then).
func saleQueued(store *orderdb.Store) sale.Queued {
	if store == nil {
		return nil
	}
	return store.Queued
}

// unitsLeft is what the SKU's Redis buckets hold, for the sale's serving
// counter.
func (s *Server) unitsLeft(ctx context.Context, sku string) (int64, error) {
	av, err := s.deps.Stock.AvailableTo(ctx, sku, "")
	return av.Units, err
}

// Handler serves the API.
func (s *Server) Handler() http.Handler { return s.handler }

// Gate is the buy requests' load-shedding gate.
func (s *Server) Gate() *edge.Gate { return s.gate }

// Run keeps the edge's sold-out cache in step with stock changes on every
// instance, and flushes the sale page's traffic counts to Redis, until ctx
// ends.
func (s *Server) Run(ctx context.Context) error {
	flushed := make(chan struct{})
	go func() {
		defer close(flushed)
		s.traffic.Run(ctx)
	}()
	defer func() { <-flushed }()
	return s.gate.Run(ctx)
}

// now is the clock signature timestamps are checked against.
func (s *Server) now() time.Time {
	if s.cfg.Now != nil {
		return s.cfg.Now()
	}
	return time.Now()
}

// Drain makes /readyz fail, so a load balancer stops sending new requests
// while the server shuts down, and answers every held look at a queue
// (?wait=) now, so none keeps the shutdown waiting.
func (s *Server) Drain() {
	s.draining.Store(true)
	s.waits.Close()
}

// HTTPServer returns an http.Server for the API on cfg.Addr with timeouts
// for a public listener.
func (s *Server) HTTPServer() *http.Server {
	readTimeout := cmp.Or(s.cfg.ReadTimeout, DefaultReadTimeout)
	var protocols *http.Protocols
	if s.cfg.H2C {
		protocols = new(http.Protocols)
		protocols.SetHTTP1(true)
		protocols.SetUnencryptedHTTP2(true)
	}
	return &http.Server{
		// HTTP/1.1, and HTTP/2 without TLS when the config asks (h2c);
		// nil is net/http's default (HTTP/1.1 on a plain listener).
		Protocols: protocols,
		Addr:      s.cfg.Addr,
		Handler:   s.handler,
		// Slow-header clients (slowloris) are cut off early.
		ReadHeaderTimeout: min(5*time.Second, readTimeout),
		// A body not in by then is answered 408 (readBody): the write
		// deadline is WriteTimeout's, so the answer still goes out.
		ReadTimeout: readTimeout,
		// Must exceed placeTimeout, or a buyer whose reservation took
		// long would lose the answer after the unit was taken, and the
		// read timeout, or a 408 would never reach the client.
		WriteTimeout:   max(placeTimeout, readTimeout) + 10*time.Second,
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
			s.writeError(w, r, refuse(MethodNotAllowed, "method not allowed; use "+strings.Join(allow, ", ")))
		})
	}
	route("/api/v1/orders", map[string]http.HandlerFunc{http.MethodPost: s.createOrder})
	route("/api/v1/orders/{id}", map[string]http.HandlerFunc{http.MethodGet: s.getOrder})
	route("/api/v1/orders/{id}/cancel", map[string]http.HandlerFunc{http.MethodPost: s.cancelOrder})
	route("/api/v1/payments/callback", map[string]http.HandlerFunc{http.MethodPost: s.paymentCallback})
	route("/api/v1/payments/hold", map[string]http.HandlerFunc{http.MethodPost: s.extendHold})
	route("/api/v1/inventory/{sku}", map[string]http.HandlerFunc{http.MethodGet: s.getInventory})
	route("/api/v1/skus/{sku}/waitlist", map[string]http.HandlerFunc{http.MethodPost: s.joinWaitlist})
	route("/api/v1/skus/{sku}/waitlist/me", map[string]http.HandlerFunc{http.MethodGet: s.waitlistPlace})
	route("/api/v1/skus/{sku}/queue", map[string]http.HandlerFunc{http.MethodPost: s.enterQueue})
	route("/api/v1/skus/{sku}/queue/me", map[string]http.HandlerFunc{http.MethodGet: s.queuePlace})
	route("/api/v1/admin/skus/{sku}", map[string]http.HandlerFunc{http.MethodPut: s.admin(s.putSKU())})
	route("/api/v1/admin/skus/{sku}/sale", map[string]http.HandlerFunc{
		http.MethodPost: s.admin(s.startSale()), http.MethodGet: s.admin(s.getSale())})
	route("/api/v1/admin/skus/{sku}/sale/{action}", map[string]http.HandlerFunc{http.MethodPost: s.admin(s.controlSale())})
	route("/api/v1/admin/campaigns/{campaign}", map[string]http.HandlerFunc{
		http.MethodPost: s.admin(s.startCampaign()), http.MethodGet: s.admin(s.getCampaign())})
	route("/api/v1/admin/campaigns/{campaign}/{action}", map[string]http.HandlerFunc{http.MethodPost: s.admin(s.controlCampaign())})
	route("/api/v1/admin/skus/{sku}/close", map[string]http.HandlerFunc{http.MethodPost: s.admin(s.closeSKU())})
	route("/api/v1/admin/skus/{sku}/preheat", map[string]http.HandlerFunc{http.MethodPost: s.admin(s.preheat())})
	route("/api/v1/admin/skus/{sku}/restock", map[string]http.HandlerFunc{http.MethodPost: s.admin(s.restock())})
	route("/api/v1/admin/skus/{sku}/buckets", map[string]http.HandlerFunc{http.MethodPost: s.admin(s.resizeBuckets())})
	route("/api/v1/admin/orders/{id}/refund", map[string]http.HandlerFunc{http.MethodPost: s.admin(s.refundOrder())})
	route("/api/v1/admin/payments/{transaction_id}/refunded", map[string]http.HandlerFunc{http.MethodPost: s.admin(s.markRefunded())})
	route("/healthz", map[string]http.HandlerFunc{http.MethodGet: s.healthz})
	route("/readyz", map[string]http.HandlerFunc{http.MethodGet: s.readyz})
	route("/metrics", map[string]http.HandlerFunc{http.MethodGet: s.getMetrics})
	route("/api/openapi.yaml", map[string]http.HandlerFunc{http.MethodGet: s.openAPIDocument})
	sale := newSaleBoard(s) // the live sale page (salepage.go)
	route("/sale/{sku}", map[string]http.HandlerFunc{http.MethodGet: sale.page})
	route("/static/sale/{file}", map[string]http.HandlerFunc{http.MethodGet: sale.asset})
	route("/api/v1/skus/{sku}/live", map[string]http.HandlerFunc{http.MethodGet: sale.live})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.writeError(w, r, &flashsale.Error{Code: NotFound})
	})
	return s.middleware(mux)
}
