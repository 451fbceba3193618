//go:build integration

package orderdb

import (
	"context"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/internal/testenv"
)

// proxy forwards connections to addr until stop, which closes the listener
// and every connection: MySQL gone from under an open store.
func proxy(t *testing.T, addr string) (listen string, stop func()) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", addr)
			if err != nil {
				_ = c.Close()
				continue
			}
			mu.Lock()
			conns = append(conns, c, up)
			mu.Unlock()
			go func() { _, _ = io.Copy(up, c); _ = up.Close() }()
			go func() { _, _ = io.Copy(c, up); _ = c.Close() }()
		}
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			_ = ln.Close()
			mu.Lock()
			defer mu.Unlock()
			for _, c := range conns {
				_ = c.Close()
			}
		})
	}
	t.Cleanup(stop)
	return ln.Addr().String(), stop
}

// Every door sees the same code: a store whose MySQL went away answers
// Unavailable from reads (GORM callbacks), transactions (BEGIN) and Ping.
func TestStoreOutageIsUnavailable(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg, err := mysql.ParseDSN(testenv.MySQLDSN(t))
	require.NoError(t, err)
	addr, stop := proxy(t, cfg.Addr)
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
