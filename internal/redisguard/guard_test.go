package redisguard

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/flashsale/flashsale"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// replyError is what go-redis returns for an error reply from the server.
type replyError string

func (e replyError) Error() string { return string(e) }
func (replyError) RedisError()     {}

func TestIsOutage(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"key not found", redis.Nil, false},
		{"error reply", fmt.Errorf("take: %w", replyError("NOSCRIPT No matching script")), false},
		{"cluster down", fmt.Errorf("mget: %w", replyError("CLUSTERDOWN The cluster is down")), true},
		{"try again", replyError("TRYAGAIN Multiple keys request during rehashing of slot"), true},
		{"master down", replyError("MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'."), true},
		{"loading", replyError("LOADING Redis is loading the dataset in memory"), true},
		{"business error", errors.New("sold out"), false},
		{"caller cancelled", context.Canceled, false},
		{"refused", fmt.Errorf("dial: %w", syscall.ECONNREFUSED), true},
		{"reset", fmt.Errorf("read: %w", syscall.ECONNRESET), true},
		{"net error", &net.OpError{Op: "read", Err: errors.New("i/o timeout")}, true},
		{"deadline", fmt.Errorf("reserve: %w", context.DeadlineExceeded), true},
		{"eof", io.EOF, true},
		{"pool timeout", fmt.Errorf("take: %w", redis.ErrPoolTimeout), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, IsOutage(tt.err))
		})
	}
	require.True(t, IsOverload(fmt.Errorf("take: %w", redis.ErrPoolTimeout)))
	require.False(t, IsOverload(fmt.Errorf("dial: %w", syscall.ECONNREFUSED)))
}

// A burst that exhausts this process's pool is not an outage: any number
// of pool timeouts leave the guard closed. Nor do they hide one: between
// the outages of a hung Redis (the calls holding connections time out)
// its waiters' pool timeouts do not reset the count, so it still opens.
func TestGuardIgnoresPoolTimeouts(t *testing.T) {
	g := New(Options{Failures: 2, Cooldown: time.Hour})
	call := func(err error) {
		done, ok := g.Allow()
		require.True(t, ok)
		done(err)
	}
	for range 100 {
		call(fmt.Errorf("take: %w", redis.ErrPoolTimeout))
	}
	require.True(t, g.Up(), "an overload keeps Redis in use")

	call(&net.OpError{Op: "read", Err: errors.New("i/o timeout")})
	call(redis.ErrPoolTimeout)
	require.True(t, g.Up())
	call(&net.OpError{Op: "read", Err: errors.New("i/o timeout")})
	require.False(t, g.Up(), "two outages with only pool timeouts between them open it")
}

func TestCode(t *testing.T) {
	for _, tt := range []struct {
		name string
		err  error
		want flashsale.Code
	}{
		{"deadline", fmt.Errorf("get: %w", context.DeadlineExceeded), flashsale.Unavailable},
		{"pool timeout", fmt.Errorf("take: %w", redis.ErrPoolTimeout), flashsale.Busy},
		{"caller left", fmt.Errorf("get: %w", context.Canceled), flashsale.Internal},
		{"a reply", redis.Nil, flashsale.Internal},
		{"coded already", fmt.Errorf("%w: %w", flashsale.Errorf(flashsale.SoldOut, "sold out"), redis.ErrPoolTimeout), flashsale.SoldOut},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.err
			Code(&err, "store unavailable")
			require.Equal(t, tt.want, flashsale.ErrorCode(err))
			require.ErrorIs(t, err, tt.err, "the cause stays wrapped")
		})
	}
	var none error
	Code(&none, "store unavailable")
	require.NoError(t, none)
}

// The guard opens after Failures consecutive outages (replies in between
// do not count as outages), refuses calls while open, lets one probe
// through after the cool-down, and closes when the probe succeeds.
func TestGuardCycle(t *testing.T) {
	g := New(Options{Failures: 2, Cooldown: 50 * time.Millisecond})
	outage := fmt.Errorf("dial: %w", syscall.ECONNREFUSED)
	call := func(err error) bool {
		done, ok := g.Allow()
		if ok {
			done(err)
		}
		return ok
	}

	require.True(t, call(outage))
	require.True(t, call(redis.Nil), "a reply resets the count")
	require.True(t, call(outage))
	require.True(t, g.Up())
	require.True(t, call(outage))
	require.False(t, g.Up(), "two outages in a row open it")
	require.False(t, call(nil), "open: Redis is not tried")

	require.Eventually(t, func() bool {
		done, ok := g.Allow()
		if !ok {
			return false
		}
		// The probe is alone: nobody else may call while it runs.
		_, other := g.Allow()
		require.False(t, other)
		done(nil)
		return true
	}, 5*time.Second, 5*time.Millisecond)
	require.True(t, g.Up(), "a successful probe closes it")

	var nilGuard *Guard
	require.True(t, nilGuard.Up())
	_, ok := nilGuard.Allow()
	require.True(t, ok)
}
