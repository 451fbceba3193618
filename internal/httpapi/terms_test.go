//go:build integration

package httpapi_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/internal/testenv"
)

// A SKU with a 25-hour payment window: its order's pay_by is 25 hours out,
// and every Redis key that stands for the order's unit outlives it by the
// margin (flashsale.MarkerTTL), so the release at the deadline finds them.
// A window out of bounds is refused, saying why, and defines nothing.
func TestPaymentWindowPerSKU(t *testing.T) {
	s := newStack(t, stackOptions{})
	api := s.api
	sku := s.name("window25")
	r := api.call(http.MethodPut, "/api/v1/admin/skus/"+sku, mustJSON(t, map[string]any{
		"total": 3, "price": 100, "buckets": 2, "per_user_limit": 1, "payment_window": "25h",
	}), adminHeader())
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	require.Equal(t, "25h", r.json(t)["payment_window"])

	before := time.Now()
	r = api.buy("k1", s.name("u1"), sku, 1)
	require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
	id := r.json(t)["order_id"].(string)
	payBy, err := time.Parse(time.RFC3339Nano, r.json(t)["pay_by"].(string))
	require.NoError(t, err)
	require.WithinRange(t, payBy, before.Add(25*time.Hour-time.Second), time.Now().Add(25*time.Hour+time.Second))
	o, err := s.b.Orders.Order(t.Context(), id)
	require.NoError(t, err)
	require.Equal(t, payBy.UTC(), o.PayBy, "the database holds the same deadline the workflow's timer runs to")

	// Every key of the SKU with a TTL (the sold-out hint and the "nothing
	// taken here" probes aside) lives past the window plus a day's margin.
	rdb := testenv.Redis(t)
	ctx := context.Background()
	longest := flashsale.MarkerTTL - time.Minute
	checkTTLs := func() int {
		t.Helper()
		n := 0
		for _, pattern := range []string{"fs:{sku:" + sku + "*", "fs:placed:" + id} {
			iter := rdb.Scan(ctx, 0, pattern, 1000).Iterator()
			for iter.Next(ctx) {
				key := iter.Val()
				ttl, err := rdb.PTTL(ctx, key).Result()
				require.NoError(t, err)
				if ttl < 0 || strings.HasSuffix(key, ":soldout") {
					continue
				}
				if v, err := rdb.Get(ctx, key).Result(); err == nil && v == "0" && strings.Contains(key, ":order:") {
					continue
				}
				require.GreaterOrEqual(t, ttl, longest, "key %s lives %s, less than the window plus the margin", key, ttl)
				require.Greater(t, ttl, 25*time.Hour+23*time.Hour, key)
				n++
			}
			require.NoError(t, iter.Err())
		}
		return n
	}
	require.GreaterOrEqual(t, checkTTLs(), 3, "the take marker, the buyer's claim and the placed id at least")

	// The unit comes back when the order closes, and the release's
	// tombstones keep the same lifetime.
	require.Equal(t, http.StatusOK, api.cancel(s.name("u1"), id).status)
	require.Eventually(t, func() bool {
		inv := api.inventory(sku)
		return inv.Available == 3 && inv.DBAvailable == 3 && inv.Frozen == 0
	}, 10*time.Second, 50*time.Millisecond)
	checkTTLs()
	s.checkClean(sku)

	for _, w := range []string{"73h", "30s", "200h"} {
		bad := s.name("window-bad")
		r := api.call(http.MethodPut, "/api/v1/admin/skus/"+bad, mustJSON(t, map[string]any{
			"total": 1, "price": 100, "payment_window": w,
		}), adminHeader())
		require.Equal(t, http.StatusBadRequest, r.status, "%s", r.body)
		require.Equal(t, "INVALID_TERMS", r.code(t))
		require.Equal(t, "payment_window "+w+" is outside 1m-72h: Redis keeps an order's units for 96h "+
			"(the longest window plus a day), so a longer window would lose units when its keys expire", r.json(t)["message"])
		_, err := s.b.Orders.Inventory(t.Context(), bad)
		require.Equal(t, flashsale.UnknownSKU, flashsale.ErrorCode(err), "a refused window defines nothing")
	}
	r = api.call(http.MethodPut, "/api/v1/admin/skus/"+s.name("window-typo"), []byte(`{"total":1,"price":1,"payment_window":"15 minutes"}`), adminHeader())
	require.Equal(t, http.StatusBadRequest, r.status, "%s", r.body)
	require.Equal(t, "INVALID_REQUEST", r.code(t))
}
