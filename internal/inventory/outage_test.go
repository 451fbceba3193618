package inventory

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/internal/redisguard"
)

// A Redis that does not answer is Unavailable from every exported method,
// and the circuit breaker still sees the outage through the code.
func TestUnreachableRedisIsUnavailable(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: time.Second})
	t.Cleanup(func() { _ = rdb.Close() })
	s := New(rdb, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	calls := map[string]func() error{
		"Stock":   func() error { _, err := s.Stock(ctx, "sku"); return err },
		"Reserve": func() error { _, err := s.Reserve(ctx, "o-1", "sku", 1); return err },
		"Release": func() error { _, err := s.Release(ctx, "o-1", "sku"); return err },
		"SoldOut": func() error { _, err := s.SoldOut(ctx, "sku"); return err },
		"Preheat": func() error { _, err := s.Preheat(ctx, "sku", 3, 1); return err },
		"RawTake": func() error { return s.RawTake(ctx, "sku", 0, "o-1") },
	}
	for name, call := range calls {
		t.Run(name, func(t *testing.T) {
			err := call()
			require.Equal(t, flashsale.Unavailable, flashsale.ErrorCode(err), "%v", err)
			require.Equal(t, "stock store unavailable", flashsale.ErrorMessage(err))
			_, isNet := errors.AsType[net.Error](err)
			require.True(t, isNet, "cause kept: %v", err)
			require.True(t, redisguard.IsOutage(err), "the breaker still trips on it")
		})
	}
}
