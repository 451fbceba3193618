package httpapi

import (
	"fmt"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestRecentSKUsCapped: the per-SKU gauges cover at most maxRecentSKUs
// SKUs, the most recently noted, capped on insert (no scrape needed), and
// forget those not noted within recentSKUTTL.
func TestRecentSKUsCapped(t *testing.T) {
	var r recentSKUs
	now := time.Now()
	for i := range maxRecentSKUs + 5 {
		r.note(fmt.Sprintf("s%02d", i), now.Add(time.Duration(i)*time.Second))
		n := 0
		r.seen.Range(func(any, any) bool { n++; return true })
		require.LessOrEqual(t, n, maxRecentSKUs)
		require.Equal(t, n, r.n)
	}
	got := r.list(now.Add(time.Minute))
	require.Len(t, got, maxRecentSKUs)
	require.NotContains(t, got, "s00", "the oldest went first")
	require.Contains(t, got, fmt.Sprintf("s%02d", maxRecentSKUs+4))
	require.Empty(t, r.list(now.Add(recentSKUTTL+time.Hour)), "forgotten after the TTL")
}

func TestRouteLabelIsThePattern(t *testing.T) {
	r := httptest.NewRequest("GET", "/api/v1/orders/abc", nil)
	require.Equal(t, "unmatched", routeLabel(r))
	r.Pattern = "GET /api/v1/orders/{id}"
	require.Equal(t, "GET /api/v1/orders/{id}", routeLabel(r))
}
