// Package backend connects a flashsale process to the services it runs on:
// Temporal, Redis and MySQL. The worker, the starter and the HTTP API all
// build their connections here, so they agree on pools and timeouts. What
// runs on a worker is the workflows package's to say (workflows/worker.go).
package backend

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/redis/go-redis/v9"
	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/workflow"

	"github.com/flashsale/flashsale/internal/config"
	"github.com/flashsale/flashsale/internal/inventory"
	"github.com/flashsale/flashsale/internal/orderdb"
	"github.com/flashsale/flashsale/internal/orders"
	"github.com/flashsale/flashsale/internal/redisguard"
	"github.com/flashsale/flashsale/internal/requestid"
)

// Backend holds open connections. Close releases them.
type Backend struct {
	Config   config.Config
	Temporal client.Client
	// Redis is a single-node or a cluster client (NewRedis).
	Redis  redis.UniversalClient
	Stock  *inventory.Store
	Orders *orderdb.Store
	// Guard tells whether Redis is reachable; the activities and the edge
	// degrade to MySQL alone while it is not.
	Guard  *redisguard.Guard
	Logger *slog.Logger
}

// Option changes how Connect builds the connections.
type Option func(*connectOptions)

type connectOptions struct {
	metrics client.MetricsHandler
}

// WithTemporalMetrics gives the Temporal client (and so every worker built
// on it) the SDK metrics handler h (internal/metrics.TemporalHandler).
func WithTemporalMetrics(h client.MetricsHandler) Option {
	return func(o *connectOptions) { o.metrics = h }
}

// Connect opens every connection. MySQL is migrated on open, which also
// creates the database on a fresh server.
func Connect(ctx context.Context, cfg config.Config, logger *slog.Logger, opts ...Option) (*Backend, error) {
	var o connectOptions
	for _, opt := range opts {
		opt(&o)
	}
	b := &Backend{Config: cfg, Logger: logger}
	ok := false
	defer func() {
		if !ok {
			b.Close()
		}
	}()

	if cfg.UserIDKeyDefaulted {
		logger.Warn("USER_ID_HMAC_KEY is not set: buyers' ids in Temporal's visibility are hashed with a key everyone knows; set a secret in production")
	}
	b.Redis = NewRedis(cfg)
	b.Guard = redisguard.New(redisguard.Options{Logger: logger})
	b.Stock = inventory.New(b.Redis, inventory.Options{})
	if err := b.Stock.Ping(ctx); err != nil {
		return nil, fmt.Errorf("connect redis %s (cluster: %v): %w", cfg.RedisAddr, cfg.RedisClusterMode(), err)
	}
	// A process refuses to start on a Redis that may evict: a sale on it
	// could lose stock or markers at the first memory pressure.
	if err := b.CheckEviction(ctx); err != nil {
		return nil, fmt.Errorf("redis eviction policy: %w", err)
	}

	store, err := orderdb.Open(ctx, cfg.MySQLDSN)
	if err != nil {
		return nil, fmt.Errorf("open mysql: %w", err)
	}
	b.Orders = store
	if cfg.MySQLMaxConns > 0 {
		store.SetMaxConns(cfg.MySQLMaxConns)
	}

	b.Temporal, err = client.DialContext(ctx, TemporalOptions(cfg, logger, o.metrics))
	if err != nil {
		return nil, fmt.Errorf("connect temporal %s (tls: %v, api key: %v): %w",
			cfg.TemporalAddress, cfg.Temporal.TLS(), cfg.Temporal.APIKey, orders.CodeDown(err))
	}
	ok = true
	return b, nil
}

// CheckEviction is GateEviction on b's Redis with b's REDIS_ALLOW_EVICTION:
// the start-up check, and each readiness probe's.
func (b *Backend) CheckEviction(ctx context.Context) error {
	return GateEviction(ctx, b.Redis, b.Config.RedisAllowEviction, b.Logger)
}

// TemporalOptions are the Temporal client's options for cfg: address,
// namespace, TLS and API key (cfg.Temporal), the process's logger and
// metrics handler (nil keeps the SDK's no-op one), and the request id
// propagator.
func TemporalOptions(cfg config.Config, logger *slog.Logger, metrics client.MetricsHandler) client.Options {
	opts := cfg.Temporal.Options()
	opts.HostPort = cfg.TemporalAddress
	opts.Namespace = cfg.TemporalNamespace
	opts.Logger = tlog.NewStructuredLogger(logger)
	opts.MetricsHandler = metrics
	// The API's request id rides in the headers of the workflows it
	// starts, so the worker's log lines about an order name it too.
	opts.ContextPropagators = []workflow.ContextPropagator{requestid.Propagator()}
	return opts
}

// Close releases every connection that was opened.
func (b *Backend) Close() {
	if b.Temporal != nil {
		b.Temporal.Close()
	}
	if b.Orders != nil {
		if err := b.Orders.Close(); err != nil {
			b.Logger.Warn("close mysql", "error", err)
		}
	}
	if b.Redis != nil {
		if err := b.Redis.Close(); err != nil && !errors.Is(err, redis.ErrClosed) {
			b.Logger.Warn("close redis", "error", err)
		}
	}
}
