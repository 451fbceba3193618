// Package config reads the settings every flashsale process shares (worker,
// starter, api) from the environment, so one set of variables points all of
// them at the same services.
package config

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"
)

// Config holds the process settings. Zero values are never used: Load fills
// every field with its documented default.
type Config struct {
	TemporalAddress   string // TEMPORAL_ADDRESS, default localhost:7233
	TemporalNamespace string // TEMPORAL_NAMESPACE, default "default"
	// Temporal is TLS, the API key and gRPC metadata for Temporal Cloud or
	// a secured cluster (TEMPORAL_API_KEY, TEMPORAL_TLS*, ...; see
	// TemporalClient). Zero: plaintext, no credentials.
	Temporal       TemporalClient
	TaskQueue      string        // TASK_QUEUE, default flashsale-orders
	MySQLDSN       string        // MYSQL_DSN
	PaymentTimeout time.Duration // PAYMENT_TIMEOUT, default 15m
	// RedisAddr is one host:port, or several comma-separated ones naming
	// the nodes of a Redis Cluster (REDIS_ADDR, default localhost:6379).
	// RedisAddrs splits it; RedisClusterMode says which client to build.
	RedisAddr string
	// RedisCluster asks for a cluster client even for one address: a seed
	// from which the client discovers the other nodes (REDIS_CLUSTER,
	// default false).
	RedisCluster bool
	// RedisAllowEviction runs a process on a Redis whose maxmemory-policy
	// is not noeviction, or that will not tell (REDIS_ALLOW_EVICTION,
	// default false): an override, warned about at start and on every
	// readiness probe (backend.GateEviction).
	RedisAllowEviction bool
	// WorkerConcurrency caps concurrent activity and local-activity
	// executions per worker (WORKER_CONCURRENCY, default 256). Activities are
	// short network calls, so the cap is about connection pools, not CPU.
	WorkerConcurrency int
	// WorkflowPollers is the worker's workflow-task pollers
	// (WORKER_WORKFLOW_POLLERS, default DefaultWorkflowPollers, at least
	// 2). The SDK's default, 2, is one poller on the task queue and one on
	// the sticky queue: every order's first task waits for that one
	// poller's round trip (matching, then history's RecordWorkflowTaskStarted)
	// behind the task before it, which capped a flash sale near 20 orders/s
	// whatever the cores or the window (docs/capacity.md).
	WorkflowPollers int
	// MySQLMaxConns caps the process's MySQL connections
	// (MYSQL_MAX_CONNS, default orderdb.DefaultMaxConns).
	MySQLMaxConns int
	// DegradedConcurrency caps, per process, the orders reserved in MySQL
	// alone while Redis is unreachable (DEGRADED_CONCURRENCY, default 8):
	// on a worker the concurrent CreateOrder calls, on an API instance the
	// admitted buy requests per SKU.
	DegradedConcurrency int
	// UserIDKey keys the hash under which buyers' ids are kept in
	// Temporal's visibility (USER_ID_HMAC_KEY, at least 16 bytes;
	// flashsale.UserIDDigest). Every process that starts orders or looks
	// them up by buyer needs the same key. Unset: DevUserIDKey, a known
	// key fit for a laptop only (UserIDKeyDefaulted; the processes warn).
	UserIDKey          []byte
	UserIDKeyDefaulted bool
	// FairnessBySKU keys each order's tasks by its SKU for the server's
	// task-queue fairness (ORDER_FAIRNESS_BY_SKU, default false; the
	// server needs matching.enableFairness, docs/capacity.md).
	FairnessBySKU bool
}

// Defaults, exported so documentation and tests refer to one place.
const (
	DefaultTemporalAddress     = "localhost:7233"
	DefaultNamespace           = "default"
	DefaultTaskQueue           = "flashsale-orders"
	DefaultRedisAddr           = "localhost:6379"
	DefaultMySQLDSN            = "root@tcp(127.0.0.1:3306)/flashsale?parseTime=true"
	DefaultPaymentTimeout      = 15 * time.Minute
	DefaultDegradedConcurrency = 8
	DefaultWorkflowPollers     = 8
	// DevUserIDKey is the user-id hash key of a process given none: the
	// digests it makes are not secret.
	DevUserIDKey = "flashsale-dev-user-id-key-not-secret"
	// MinUserIDKeyLength is the shortest USER_ID_HMAC_KEY accepted.
	MinUserIDKeyLength = 16
)

// Load reads the configuration from the environment.
func Load() (Config, error) {
	return loadEnv(osLookup{})
}

// load reads the configuration through getenv (tests).
func load(getenv func(string) string) (Config, error) {
	return loadEnv(getenvLookup(getenv))
}

func loadEnv(e env) (Config, error) {
	getenv := func(key string) string {
		v, _ := e.LookupEnv(key)
		return v
	}
	str := func(key, def string) string {
		if v := getenv(key); v != "" {
			return v
		}
		return def
	}
	cfg := Config{
		// Set here they win over a TEMPORAL_CONFIG_FILE profile's; unset,
		// the profile's or the defaults apply (loadTemporal).
		TemporalAddress:     str("TEMPORAL_ADDRESS", ""),
		TemporalNamespace:   str("TEMPORAL_NAMESPACE", ""),
		TaskQueue:           str("TASK_QUEUE", DefaultTaskQueue),
		RedisAddr:           str("REDIS_ADDR", DefaultRedisAddr),
		MySQLDSN:            str("MYSQL_DSN", DefaultMySQLDSN),
		PaymentTimeout:      DefaultPaymentTimeout,
		WorkerConcurrency:   256,
		WorkflowPollers:     DefaultWorkflowPollers,
		DegradedConcurrency: DefaultDegradedConcurrency,
	}
	address, namespace, temporal, err := loadTemporal(e)
	if err != nil {
		return Config{}, err
	}
	cfg.Temporal = temporal
	if cfg.TemporalAddress == "" {
		cfg.TemporalAddress = address
	}
	if cfg.TemporalNamespace == "" {
		cfg.TemporalNamespace = namespace
	}
	if err := validateRedisAddr(cfg.RedisAddr); err != nil {
		return Config{}, err
	}
	if v := getenv("REDIS_CLUSTER"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return Config{}, fmt.Errorf("REDIS_CLUSTER=%q: want true or false", v)
		}
		cfg.RedisCluster = b
	}
	if v := getenv("REDIS_ALLOW_EVICTION"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return Config{}, fmt.Errorf("REDIS_ALLOW_EVICTION=%q: want true or false", v)
		}
		cfg.RedisAllowEviction = b
	}
	cfg.UserIDKey = []byte(getenv("USER_ID_HMAC_KEY"))
	switch n := len(cfg.UserIDKey); {
	case n == 0:
		cfg.UserIDKey, cfg.UserIDKeyDefaulted = []byte(DevUserIDKey), true
	case n < MinUserIDKeyLength:
		return Config{}, fmt.Errorf("USER_ID_HMAC_KEY is %d bytes: want at least %d", n, MinUserIDKeyLength)
	}
	if v := getenv("PAYMENT_TIMEOUT"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return Config{}, fmt.Errorf("PAYMENT_TIMEOUT=%q: want a positive duration such as 15m", v)
		}
		cfg.PaymentTimeout = d
	}
	if v := getenv("WORKER_CONCURRENCY"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			return Config{}, fmt.Errorf("WORKER_CONCURRENCY=%q: want a positive integer", v)
		}
		cfg.WorkerConcurrency = n
	}
	if v := getenv("WORKER_WORKFLOW_POLLERS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 2 {
			return Config{}, fmt.Errorf("WORKER_WORKFLOW_POLLERS=%q: want an integer of at least 2", v)
		}
		cfg.WorkflowPollers = n
	}
	if v := getenv("MYSQL_MAX_CONNS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			return Config{}, fmt.Errorf("MYSQL_MAX_CONNS=%q: want a positive integer", v)
		}
		cfg.MySQLMaxConns = n
	}
	if v := getenv("ORDER_FAIRNESS_BY_SKU"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return Config{}, fmt.Errorf("ORDER_FAIRNESS_BY_SKU=%q: want true or false", v)
		}
		cfg.FairnessBySKU = b
	}
	if v := getenv("DEGRADED_CONCURRENCY"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			return Config{}, fmt.Errorf("DEGRADED_CONCURRENCY=%q: want a positive integer", v)
		}
		cfg.DegradedConcurrency = n
	}
	return cfg, nil
}

// RedisAddrs returns the addresses in RedisAddr, spaces trimmed.
func (c Config) RedisAddrs() []string {
	var addrs []string
	for a := range strings.SplitSeq(c.RedisAddr, ",") {
		if a = strings.TrimSpace(a); a != "" {
			addrs = append(addrs, a)
		}
	}
	return addrs
}

// RedisClusterMode reports whether RedisAddr names a Redis Cluster: several
// addresses, or RedisCluster set. One address without it is a single node,
// which a cluster client could not talk to (CLUSTER SLOTS fails there).
func (c Config) RedisClusterMode() bool {
	return c.RedisCluster || len(c.RedisAddrs()) > 1
}

// validateRedisAddr rejects an empty entry or one that is not host:port,
// so a typo fails at start instead of as a dial error on the first buy.
func validateRedisAddr(v string) error {
	for a := range strings.SplitSeq(v, ",") {
		a = strings.TrimSpace(a)
		if _, port, err := net.SplitHostPort(a); err != nil || port == "" {
			return fmt.Errorf("REDIS_ADDR=%q: want host:port, or several comma-separated for a Redis Cluster", v)
		}
	}
	return nil
}
