// Package config reads the settings every flashsale process shares (worker,
// starter, api) from the environment, so one set of variables points all of
// them at the same services.
package config

import (
	"fmt"
	"os"
	"strconv"
	"time"
)

// Config holds the process settings. Zero values are never used: Load fills
// every field with its documented default.
type Config struct {
	TemporalAddress   string        // TEMPORAL_ADDRESS, default localhost:7233
	TemporalNamespace string        // TEMPORAL_NAMESPACE, default "default"
	TaskQueue         string        // TASK_QUEUE, default flashsale-orders
	RedisAddr         string        // REDIS_ADDR, default localhost:6379
	MySQLDSN          string        // MYSQL_DSN
	PaymentTimeout    time.Duration // PAYMENT_TIMEOUT, default 15m
	// WorkerConcurrency caps concurrent activity and local-activity
	// executions per worker (WORKER_CONCURRENCY, default 256). Activities are
	// short network calls, so the cap is about connection pools, not CPU.
	WorkerConcurrency int
	// DegradedConcurrency caps, per process, the orders reserved in MySQL
	// alone while Redis is unreachable (DEGRADED_CONCURRENCY, default 8):
	// on a worker the concurrent CreateOrder calls, on an API instance the
	// admitted buy requests per SKU.
	DegradedConcurrency int
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
)

// Load reads the configuration from the environment.
func Load() (Config, error) {
	return load(os.Getenv)
}

func load(getenv func(string) string) (Config, error) {
	str := func(key, def string) string {
		if v := getenv(key); v != "" {
			return v
		}
		return def
	}
	cfg := Config{
		TemporalAddress:     str("TEMPORAL_ADDRESS", DefaultTemporalAddress),
		TemporalNamespace:   str("TEMPORAL_NAMESPACE", DefaultNamespace),
		TaskQueue:           str("TASK_QUEUE", DefaultTaskQueue),
		RedisAddr:           str("REDIS_ADDR", DefaultRedisAddr),
		MySQLDSN:            str("MYSQL_DSN", DefaultMySQLDSN),
		PaymentTimeout:      DefaultPaymentTimeout,
		WorkerConcurrency:   256,
		DegradedConcurrency: DefaultDegradedConcurrency,
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
	if v := getenv("DEGRADED_CONCURRENCY"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			return Config{}, fmt.Errorf("DEGRADED_CONCURRENCY=%q: want a positive integer", v)
		}
		cfg.DegradedConcurrency = n
	}
	return cfg, nil
}
