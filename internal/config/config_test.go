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
		{name: "bad degraded concurrency", env: map[string]string{"DEGRADED_CONCURRENCY": "-2"}, wantErr: "DEGRADED_CONCURRENCY"},
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
				DegradedConcurrency: DefaultDegradedConcurrency,
			}
			tt.want(&want)
			require.Equal(t, want, got)
		})
	}
}
