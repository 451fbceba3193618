//go:build integration

package clustertest

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/flashsale/flashsale/internal/app/apptest"
	"github.com/flashsale/flashsale/internal/config"
	"github.com/flashsale/flashsale/internal/testenv"
)

// TestProcessesConnectToTheCluster: the environment a worker, an API or
// the starter reads (config.Load) and the connections they open (the
// backend's, opened here through apptest.Open) work with a cluster named
// by all its addresses, and with one seed address and REDIS_CLUSTER=true.
func TestProcessesConnectToTheCluster(t *testing.T) {
	addr := useCluster(t, false)
	seed, _, _ := strings.Cut(addr, ",")
	t.Setenv("MYSQL_DSN", testenv.MySQLDSN(t))
	t.Setenv("TEMPORAL_ADDRESS", testenv.TemporalAddress())
	logger := slog.New(slog.DiscardHandler)

	for _, tt := range []struct{ name, addr, cluster string }{
		{name: "all addresses", addr: addr},
		{name: "one seed", addr: seed, cluster: "true"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("REDIS_ADDR", tt.addr)
			t.Setenv("REDIS_CLUSTER", tt.cluster)
			cfg, err := config.Load()
			require.NoError(t, err)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			b, err := apptest.Open(ctx, cfg, logger)
			require.NoError(t, err)
			t.Cleanup(b.Close) // after newSKU's cleanup, which uses the client
			cc, ok := b.Redis.(*redis.ClusterClient)
			require.True(t, ok, "got %T", b.Redis)

			// The stock of one SKU spans every master; the seed client
			// found them all.
			sku := newSKU(t, cc)
			_, err = b.Stock.Preheat(ctx, sku, 32, 16)
			require.NoError(t, err)
			require.Len(t, bucketMasters(ctx, t, cc, sku, 16), 3)
			s := newSale()
			buy(ctx, b.Stock, sku, orderIDs("p", 40), 1, 40, false, s)
			require.Empty(t, s.errs)
			require.Len(t, s.won, 32)
		})
	}

	t.Run("cluster flag on a single redis fails at start", func(t *testing.T) {
		t.Setenv("REDIS_ADDR", testenv.RedisAddr())
		t.Setenv("REDIS_CLUSTER", "true")
		cfg, err := config.Load()
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err = apptest.Open(ctx, cfg, logger)
		require.ErrorContains(t, err, "cluster support disabled")
		t.Log(err)
	})
}
