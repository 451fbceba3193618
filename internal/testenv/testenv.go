// Package testenv connects tests to the real services they exercise: Redis,
// MariaDB and a Temporal server. A missing service fails the test loudly
// instead of skipping it, so a green run always means the behaviour was
// checked against the real thing. .ci/run starts whatever is not running.
package testenv

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"os"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/redis/go-redis/v9"
)

// Env var names shared with the worker, so one setting points both at the
// same services.
const (
	envRedisAddr       = "REDIS_ADDR"
	envMySQLDSN        = "MYSQL_DSN"
	envTemporalAddress = "TEMPORAL_ADDRESS"
)

func getenv(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// RedisAddr is the Redis the tests use.
func RedisAddr() string { return getenv(envRedisAddr, "127.0.0.1:6379") }

// TemporalAddress is the Temporal frontend the tests use.
func TemporalAddress() string { return getenv(envTemporalAddress, "127.0.0.1:7233") }

// UniqueID returns a short random id so parallel tests and repeated runs never
// share SKUs, orders or databases.
func UniqueID(t testing.TB) string {
	t.Helper()
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		t.Fatalf("random id: %v", err)
	}
	return hex.EncodeToString(b)
}

// Redis returns a client for the real Redis, failing the test if it cannot
// be reached. Tests must use keys made unique with UniqueID rather than
// flushing, because other packages' tests run against the same server.
func Redis(t testing.TB) *redis.Client {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: RedisAddr(), PoolSize: 64})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if err := rdb.Ping(ctx).Err(); err != nil {
		t.Fatalf("redis at %s is required (run .ci/run or start redis-server): %v", RedisAddr(), err)
	}
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// MySQLDSN creates a fresh, empty database on the real MariaDB/MySQL server
// for this test, drops it when the test ends, and returns a DSN pointing at
// it. The server comes from MYSQL_DSN (its database name is ignored).
func MySQLDSN(t testing.TB) string {
	t.Helper()
	cfg, err := mysql.ParseDSN(getenv(envMySQLDSN, "root@tcp(127.0.0.1:3306)/flashsale?parseTime=true"))
	if err != nil {
		t.Fatalf("parse MYSQL_DSN: %v", err)
	}
	name := "flashsale_test_" + UniqueID(t)

	admin := cfg.Clone()
	admin.DBName = ""
	db, err := sql.Open("mysql", admin.FormatDSN())
	if err != nil {
		t.Fatalf("open mysql: %v", err)
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := db.ExecContext(ctx, "CREATE DATABASE `"+name+"`"); err != nil {
		t.Fatalf("mysql at %s is required (run .ci/run or start mariadbd): %v", cfg.Addr, err)
	}
	t.Cleanup(func() {
		db, err := sql.Open("mysql", admin.FormatDSN())
		if err != nil {
			return
		}
		defer db.Close()
		_, _ = db.Exec("DROP DATABASE IF EXISTS `" + name + "`")
	})

	cfg.DBName = name
	cfg.ParseTime = true
	return cfg.FormatDSN()
}
