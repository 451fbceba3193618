package backend

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A passing eviction check is trusted for EvictionRecheck, then checked
// again; a failing one is never kept, so a fix shows at the next probe.
func TestCachedEvictionTrustsAPassFor30s(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 12, 24, 20, 0, 0, 0, time.UTC)
	var checks int
	var verdict error
	cached := CachedEviction(func(context.Context) error { checks++; return verdict }, func() time.Time { return now })

	require.NoError(t, cached(ctx))
	now = now.Add(EvictionRecheck - time.Millisecond)
	require.NoError(t, cached(ctx))
	require.Equal(t, 1, checks, "two probes within the window: one check")

	bad := &EvictionError{Addr: "127.0.0.1:6379", Policy: "allkeys-lru"}
	verdict = bad
	now = now.Add(time.Millisecond)
	require.ErrorIs(t, cached(ctx), bad, "the window over: checked again, and the bad policy reported")
	require.ErrorIs(t, cached(ctx), bad)
	require.Equal(t, 3, checks, "a failing verdict is checked at every probe")

	verdict = nil // fixed
	require.NoError(t, cached(ctx))
	require.NoError(t, cached(ctx))
	require.Equal(t, 4, checks, "fixed: seen at once, then trusted again")
}
