package config

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestLoad(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		want    func(*Config)
		wantErr string
	}{
		{name: "defaults", env: nil, want: func(c *Config) {}},
		{
			name: "overrides",
			env:  map[string]string{"TASK_QUEUE": "q2", "PAYMENT_TIMEOUT": "30s", "REDIS_ADDR": "r:1"},
			want: func(c *Config) { c.TaskQueue = "q2"; c.PaymentTimeout = 30 * time.Second; c.RedisAddr = "r:1" },
		},
		{name: "bad timeout", env: map[string]string{"PAYMENT_TIMEOUT": "soon"}, wantErr: "PAYMENT_TIMEOUT"},
		{name: "negative timeout", env: map[string]string{"PAYMENT_TIMEOUT": "-1m"}, wantErr: "PAYMENT_TIMEOUT"},
		{name: "bad concurrency", env: map[string]string{"WORKER_CONCURRENCY": "0"}, wantErr: "WORKER_CONCURRENCY"},
		{
			name: "degraded concurrency", env: map[string]string{"DEGRADED_CONCURRENCY": "3"},
			want: func(c *Config) { c.DegradedConcurrency = 3 },
		},
		{
			name: "fairness by sku", env: map[string]string{"ORDER_FAIRNESS_BY_SKU": "true"},
			want: func(c *Config) { c.FairnessBySKU = true },
		},
		{name: "bad fairness by sku", env: map[string]string{"ORDER_FAIRNESS_BY_SKU": "sku"}, wantErr: "ORDER_FAIRNESS_BY_SKU"},
		{
			name: "mysql pool", env: map[string]string{"MYSQL_MAX_CONNS": "12"},
			want: func(c *Config) { c.MySQLMaxConns = 12 },
		},
		{
			name: "workflow pollers", env: map[string]string{"WORKER_WORKFLOW_POLLERS": "16"},
			want: func(c *Config) { c.WorkflowPollers = 16 },
		},
		{name: "one workflow poller", env: map[string]string{"WORKER_WORKFLOW_POLLERS": "1"}, wantErr: "WORKER_WORKFLOW_POLLERS"},
		{name: "bad mysql pool", env: map[string]string{"MYSQL_MAX_CONNS": "none"}, wantErr: "MYSQL_MAX_CONNS"},
		{name: "bad degraded concurrency", env: map[string]string{"DEGRADED_CONCURRENCY": "-2"}, wantErr: "DEGRADED_CONCURRENCY"},
		{
			name: "redis cluster addresses", env: map[string]string{"REDIS_ADDR": "127.0.0.1:7001, 127.0.0.1:7002,127.0.0.1:7003"},
			want: func(c *Config) { c.RedisAddr = "127.0.0.1:7001, 127.0.0.1:7002,127.0.0.1:7003" },
		},
		{
			name: "redis cluster seed", env: map[string]string{"REDIS_ADDR": "redis-0:7001", "REDIS_CLUSTER": "true"},
			want: func(c *Config) { c.RedisAddr = "redis-0:7001"; c.RedisCluster = true },
		},
		{
			name: "redis cluster off", env: map[string]string{"REDIS_CLUSTER": "0"},
			want: func(c *Config) {},
		},
		{name: "bad redis cluster", env: map[string]string{"REDIS_CLUSTER": "yes"}, wantErr: "REDIS_CLUSTER"},
		{
			name: "redis eviction allowed", env: map[string]string{"REDIS_ALLOW_EVICTION": "true"},
			want: func(c *Config) { c.RedisAllowEviction = true },
		},
		{
			name: "user id key", env: map[string]string{"USER_ID_HMAC_KEY": "0123456789abcdef"},
			want: func(c *Config) { c.UserIDKey, c.UserIDKeyDefaulted = []byte("0123456789abcdef"), false },
		},
		{name: "short user id key", env: map[string]string{"USER_ID_HMAC_KEY": "short"}, wantErr: "USER_ID_HMAC_KEY"},
		{name: "bad redis allow eviction", env: map[string]string{"REDIS_ALLOW_EVICTION": "yes"}, wantErr: "REDIS_ALLOW_EVICTION"},
		{name: "redis addr without port", env: map[string]string{"REDIS_ADDR": "localhost"}, wantErr: "REDIS_ADDR"},
		{name: "redis addr empty entry", env: map[string]string{"REDIS_ADDR": "a:1,,b:2"}, wantErr: "REDIS_ADDR"},
		{name: "redis addr trailing comma", env: map[string]string{"REDIS_ADDR": "a:1,"}, wantErr: "REDIS_ADDR"},
		{name: "redis addr empty port", env: map[string]string{"REDIS_ADDR": "a:1,b:"}, wantErr: "REDIS_ADDR"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := load(func(k string) string { return tt.env[k] })
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			want := Config{
				TemporalAddress: DefaultTemporalAddress, TemporalNamespace: DefaultNamespace,
				TaskQueue: DefaultTaskQueue, RedisAddr: DefaultRedisAddr, MySQLDSN: DefaultMySQLDSN,
				PaymentTimeout: DefaultPaymentTimeout, WorkerConcurrency: 256,
				WorkflowPollers: DefaultWorkflowPollers, DegradedConcurrency: DefaultDegradedConcurrency,
				UserIDKey: []byte(DevUserIDKey), UserIDKeyDefaulted: true,
			}
			tt.want(&want)
			require.Equal(t, want, got)
		})
	}
}

func TestRedisClusterMode(t *testing.T) {
	tests := []struct {
		addr    string
		cluster bool
		addrs   []string
		mode    bool
	}{
		{addr: "localhost:6379", addrs: []string{"localhost:6379"}},
		{addr: "localhost:6379", cluster: true, addrs: []string{"localhost:6379"}, mode: true},
		{addr: "a:1,b:2", addrs: []string{"a:1", "b:2"}, mode: true},
		{addr: " a:1 , b:2 ,c:3", addrs: []string{"a:1", "b:2", "c:3"}, mode: true},
		{addr: "[::1]:7001,[::1]:7002", addrs: []string{"[::1]:7001", "[::1]:7002"}, mode: true},
	}
	for _, tt := range tests {
		c := Config{RedisAddr: tt.addr, RedisCluster: tt.cluster}
		require.Equal(t, tt.addrs, c.RedisAddrs(), tt.addr)
		require.Equal(t, tt.mode, c.RedisClusterMode(), "%s cluster=%v", tt.addr, tt.cluster)
	}
}
