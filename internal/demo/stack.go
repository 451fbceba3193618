// Package demo runs a whole flash sale in one process for a person to
// watch: Temporal, Redis and a MySQL-compatible store (embedded unless the
// environment names real ones), the worker, the HTTP API, and a crowd of
// buyers. The benchmark reuses the same stack against real services.
package demo

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/flashsale/flashsale/activities"
	"github.com/flashsale/flashsale/internal/app"
	"github.com/flashsale/flashsale/internal/backend"
	"github.com/flashsale/flashsale/internal/config"
	"github.com/flashsale/flashsale/internal/devstack"
	"github.com/flashsale/flashsale/internal/httpapi"
	"github.com/flashsale/flashsale/internal/identity"
	"github.com/flashsale/flashsale/internal/jsoncall"
	"go.temporal.io/sdk/worker"
)

// StackOptions chooses the services.
type StackOptions struct {
	// Config names the services; an empty TemporalAddress, RedisAddr or
	// MySQLDSN starts the embedded one.
	Config config.Config
	// TemporalDBFile keeps an embedded Temporal's history on disk.
	TemporalDBFile string
	// Progress receives start-up messages for a person (may be nil).
	Progress io.Writer
	// Logger receives the services' logs; nil logs errors only, to stderr.
	Logger *slog.Logger
	// API tunes the HTTP API's settings; nil keeps the production defaults
	// (the benchmark measures those).
	API func(*httpapi.Config)
	// Backend are options of the backend's connections (the benchmark's
	// Temporal SDK metrics, say).
	Backend []backend.Option
	// Register adds workflows and activities of the caller's to the worker
	// before it starts (the lab's ceiling workflows, which its benchmark
	// compares with the order on the same worker).
	Register func(worker.Registry, *activities.Activities)
}

// DemoAPI is the demo's API setting: a crowd of thousands from one machine
// gets a per-SKU window of 64 units in flight (production: 16), so the
// sale page fills in seconds.
func DemoAPI(c *httpapi.Config) { c.MaxInFlight = 64 }

// Stack is a running flash-sale deployment in this process.
type Stack struct {
	Backend    *backend.Backend
	API        *httpapi.Server
	URL        string // the HTTP API's base URL
	UIURL      string // Temporal Web UI base URL, when known
	AdminToken string
	Secret     string // webhook secret
	// Buyers mints buyer tokens the API accepts: the demo plays the shop's
	// login service too, with a secret of its own (BUYER_JWT_SECRET).
	Buyers      *identity.Minter
	TemporalPID int // 0 when Temporal is not our child process

	buyerKey identity.Config
	stops    []func()
}

// Embedded is the service configuration that starts everything in process:
// no TEMPORAL_ADDRESS, REDIS_ADDR or MYSQL_DSN.
func Embedded(cfg config.Config, getenv func(string) string) config.Config {
	if getenv("TEMPORAL_ADDRESS") == "" {
		cfg.TemporalAddress = ""
	}
	if getenv("REDIS_ADDR") == "" {
		// The embedded Redis is one node, whatever REDIS_CLUSTER says.
		cfg.RedisAddr, cfg.RedisCluster = "", false
	}
	if getenv("MYSQL_DSN") == "" {
		cfg.MySQLDSN = ""
	}
	return cfg
}

// StartStack starts what is missing, connects, and serves the worker and the
// API on a loopback port. Close stops everything it started.
func StartStack(ctx context.Context, opts StackOptions) (st *Stack, err error) {
	buyerKey := identity.Config{Secret: []byte(randomHex(32))}
	st = &Stack{AdminToken: randomHex(16), Secret: randomHex(24), Buyers: &identity.Minter{Secret: buyerKey.Secret}}
	defer func() {
		if err != nil {
			st.Close()
		}
	}()
	progress := opts.Progress
	if progress == nil {
		progress = io.Discard
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	}
	cfg := opts.Config

	if cfg.TemporalAddress == "" {
		fmt.Fprintln(progress, "starting Temporal dev server (embedded)...")
		t, err := devstack.StartTemporal(ctx, devstack.TemporalOptions{DBFile: opts.TemporalDBFile, Progress: progress})
		if err != nil {
			return nil, fmt.Errorf("start temporal: %w", err)
		}
		st.stops = append(st.stops, func() { _ = t.Stop() })
		cfg.TemporalAddress, st.UIURL, st.TemporalPID = t.Address(), t.UIURL(), t.PID()
	}
	if cfg.RedisAddr == "" {
		fmt.Fprintln(progress, "starting Redis (embedded miniredis)...")
		r, err := devstack.StartRedis()
		if err != nil {
			return nil, fmt.Errorf("start redis: %w", err)
		}
		st.stops = append(st.stops, r.Stop)
		cfg.RedisAddr = r.Addr()
	}
	if cfg.MySQLDSN == "" {
		fmt.Fprintln(progress, "starting MySQL-compatible store (embedded go-mysql-server)...")
		m, err := devstack.StartMySQL(ctx, devstack.MySQLOptions{Progress: progress})
		if err != nil {
			return nil, fmt.Errorf("start mysql: %w", err)
		}
		st.stops = append(st.stops, func() { _ = m.Stop() })
		cfg.MySQLDSN = m.DSN()
	}

	b, err := backend.Connect(ctx, cfg, logger, opts.Backend...)
	if err != nil {
		return nil, err
	}
	st.Backend = b
	st.stops = append(st.stops, b.Close)

	// Reconciliation runs as in production, and the go/no-go before a
	// queued sale's open finds its Schedule.
	if err := app.EnsureReconcileSchedule(ctx, b, time.Minute, false); err != nil {
		return nil, err
	}
	w := app.NewWorker(b)
	if opts.Register != nil {
		opts.Register(w, app.Activities(b))
	}
	if err := w.Start(); err != nil {
		return nil, fmt.Errorf("start worker: %w", err)
	}
	st.stops = append(st.stops, w.Stop)

	st.buyerKey = buyerKey
	if err := st.serveAPI(ctx, opts.API); err != nil {
		return nil, err
	}
	return st, nil
}

// WithAPI is the stack with another API instance of its own settings
// (tune, applied to the production defaults) on the same backend and
// worker, as a second instance behind a load balancer would be: the
// benchmark's A/B of an API setting. It stops with st.
func (st *Stack) WithAPI(ctx context.Context, tune func(*httpapi.Config)) (*Stack, error) {
	other := &Stack{Backend: st.Backend, UIURL: st.UIURL, AdminToken: st.AdminToken, Secret: st.Secret,
		Buyers: st.Buyers, TemporalPID: st.TemporalPID, buyerKey: st.buyerKey}
	if err := other.serveAPI(ctx, tune); err != nil {
		other.Close()
		return nil, err
	}
	st.stops = append(st.stops, other.Close)
	return other, nil
}

// serveAPI starts st's HTTP API on a loopback port, with the production
// defaults tuned by tune (may be nil).
func (st *Stack) serveAPI(ctx context.Context, tune func(*httpapi.Config)) error {
	cfg := httpapi.Config{
		Addr: "127.0.0.1:0", WebhookSecrets: []string{st.Secret}, AdminToken: st.AdminToken, Identity: st.buyerKey,
	}
	if tune != nil {
		tune(&cfg)
	}
	api, err := app.NewHTTPAPI(ctx, st.Backend, cfg)
	if err != nil {
		return err
	}
	st.API = api
	apiCtx, stopAPI := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	wg.Go(func() { _ = api.Run(apiCtx) })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		stopAPI()
		return fmt.Errorf("listen: %w", err)
	}
	srv := api.HTTPServer()
	wg.Go(func() { _ = srv.Serve(ln) })
	st.URL = "http://" + ln.Addr().String()
	st.stops = append(st.stops, func() {
		shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shut)
		stopAPI()
		wg.Wait()
	})
	return nil
}

// Close stops everything, newest first.
func (st *Stack) Close() {
	for i := len(st.stops) - 1; i >= 0; i-- {
		st.stops[i]()
	}
	st.stops = nil
}

// Admin calls an operator endpoint and decodes the answer into out.
func (st *Stack) Admin(ctx context.Context, method, path string, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return err
	}
	res, err := jsoncall.Do(ctx, http.DefaultClient, method, st.URL+path, body,
		http.Header{"Authorization": {"Bearer " + st.AdminToken}})
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	if res.Status/100 != 2 {
		return fmt.Errorf("%s %s: %d %s", method, path, res.Status, res.Body)
	}
	if out != nil {
		return json.Unmarshal(res.Body, out)
	}
	return nil
}

// CreateSKU creates and preheats a SKU through the operator API.
func (st *Stack) CreateSKU(ctx context.Context, sku string, units, price int64, buckets int) error {
	if err := st.Admin(ctx, http.MethodPut, "/api/v1/admin/skus/"+sku,
		map[string]any{"total": units, "price": price, "buckets": buckets}, nil); err != nil {
		return fmt.Errorf("create sku: %w", err)
	}
	var pre struct {
		Verified bool `json:"verified"`
	}
	if err := st.Admin(ctx, http.MethodPost, "/api/v1/admin/skus/"+sku+"/preheat", struct{}{}, &pre); err != nil {
		return fmt.Errorf("preheat sku: %w", err)
	}
	if !pre.Verified {
		return errors.New("preheat not verified")
	}
	return nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
