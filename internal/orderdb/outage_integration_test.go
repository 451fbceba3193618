//go:build integration

package orderdb

import (
	"context"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/internal/testenv"
)

// Every door sees the same code: a store whose MySQL went away answers
// Unavailable from reads (GORM callbacks), transactions (BEGIN) and Ping.
func TestStoreOutageIsUnavailable(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg, err := mysql.ParseDSN(testenv.MySQLDSN(t))
	require.NoError(t, err)
	addr, stop := testenv.Relay(t, cfg.Addr)
	cfg.Addr = addr
	s, err := Open(ctx, cfg.FormatDSN())
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	_, err = s.PutSKU(ctx, flashsale.SKU{ID: "sku", Total: 3, Price: 10, Buckets: 1, PerUserLimit: 1})
	require.NoError(t, err)

	stop()
	_, err = s.Inventory(ctx, "sku")
	require.Equal(t, flashsale.Unavailable, flashsale.ErrorCode(err), "read: %v", err)
	_, err = s.Order(ctx, "o-1")
	require.Equal(t, flashsale.Unavailable, flashsale.ErrorCode(err), "read in a transaction: %v", err)
	_, err = s.PutSKU(ctx, flashsale.SKU{ID: "sku", Total: 4, Price: 10, Buckets: 1, PerUserLimit: 1})
	require.Equal(t, flashsale.Unavailable, flashsale.ErrorCode(err), "write: %v", err)
	require.Equal(t, flashsale.Unavailable, flashsale.ErrorCode(s.Ping(ctx)))

	// A caller that gave up is not an outage.
	gone, cancelGone := context.WithCancel(ctx)
	cancelGone()
	_, err = s.Inventory(gone, "sku")
	require.Error(t, err)
	require.NotEqual(t, flashsale.Unavailable, flashsale.ErrorCode(err), "%v", err)
}
