//go:build integration

package httpapi_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Resizing through the admin API mid-sale keeps every unit: held units
// stay held, the buckets keep the rest, MySQL records the count, and a
// cancelled order's unit comes back after the SKU shrank.
func TestResizeBuckets(t *testing.T) {
	s := newStack(t, stackOptions{})
	api := s.api
	sku := s.name("resize")
	path := "/api/v1/admin/skus/" + sku + "/buckets"
	api.putSKU(sku, 100, 100, 16, 5)
	order := api.mustBuy(s.name("o1"), s.name("u1"), sku, 2)
	require.Equal(t, http.StatusCreated, api.buy("", s.name("u2"), sku, 1).status)

	for _, n := range []int{64, 4} {
		r := api.call(http.MethodPost, path, mustJSON(t, map[string]any{"buckets": n}), adminHeader())
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		require.Equal(t, map[string]any{"sku_id": sku, "buckets": float64(n), "redis_available": float64(97)}, r.json(t))
		require.Equal(t, inventoryOut{SKU: sku, Total: 100, Available: 97, DBAvailable: 97, Frozen: 3, BucketCount: n},
			api.inventory(sku))
		require.Equal(t, n, s.dbInventory(sku).Buckets)
	}

	// Released after the shrink, wherever its units were taken from.
	r := api.call(http.MethodPost, "/api/v1/orders/"+order+"/cancel", nil, adminHeader())
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Equal(c, inventoryOut{SKU: sku, Total: 100, Available: 99, DBAvailable: 99, Frozen: 1, BucketCount: 4},
			api.inventory(sku))
	}, 10*time.Second, 50*time.Millisecond)

	bad := []struct {
		name, path, body string
		header           http.Header
		status           int
		code             string
	}{
		{"no token", path, `{"buckets":8}`, nil, 401, "UNAUTHORIZED"},
		{"zero", path, `{"buckets":0}`, adminHeader(), 400, "INVALID_REQUEST"},
		{"too many", path, `{"buckets":1025}`, adminHeader(), 400, "INVALID_REQUEST"},
		{"missing", path, `{}`, adminHeader(), 400, "INVALID_REQUEST"},
		{"unknown field", path, `{"buckets":8,"spread":true}`, adminHeader(), 400, "INVALID_REQUEST"},
		{"unknown sku", "/api/v1/admin/skus/" + s.name("ghost") + "/buckets", `{"buckets":8}`, adminHeader(), 404, "UNKNOWN_SKU"},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			r := api.call(http.MethodPost, tt.path, []byte(tt.body), tt.header)
			require.Equal(t, tt.status, r.status, "%s", r.body)
			require.Equal(t, tt.code, r.code(t))
		})
	}
	r = api.call(http.MethodPut, path, []byte(`{"buckets":8}`), adminHeader())
	require.Equal(t, http.StatusMethodNotAllowed, r.status)
	require.Equal(t, 4, s.dbInventory(sku).Buckets, "refused requests changed nothing")
}
