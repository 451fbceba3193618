//go:build integration

package httpapi_test

import (
	"maps"
	"net/http"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/flashsale/flashsale/internal/httpapi"
	"github.com/flashsale/flashsale/internal/identity"
	"github.com/flashsale/flashsale/internal/inventory"
)

// A restock on one instance puts the SKU back on sale on every instance at
// once. The sold-out caches here would hold for a minute: only the Pub/Sub
// message can clear them within the second the test allows.
func TestRestockReopensEveryInstance(t *testing.T) {
	s := newStack(t, stackOptions{localTTL: time.Minute})
	a := s.api
	b := s.secondInstance()
	sku := s.name("restock")
	a.putSKU(sku, 1, 100, 4, 1)

	require.Equal(t, http.StatusCreated, a.buy(s.name("o1"), s.name("u1"), sku, 1).status)
	for i, in := range []*instance{b, b, a, a} {
		r := in.buy("", s.name("late"), sku, 1)
		require.Equal(t, http.StatusConflict, r.status, "attempt %d: %s", i, r.body)
		require.Equal(t, "SOLD_OUT", r.code(t))
	}
	require.Equal(t, int64(1), b.metrics().Edge.SoldOutLocal, "b answers from its own cache")
	require.Equal(t, 1, b.metrics().Edge.LocalSoldOutSKUs)

	restock := mustJSON(t, map[string]any{"quantity": 2, "restock_id": s.name("req-1")})
	r := a.call(http.MethodPost, "/api/v1/admin/skus/"+sku+"/restock", restock, adminHeader())
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	require.Equal(t, map[string]any{"sku_id": sku, "restock_id": s.name("req-1"), "quantity": float64(2), "added": true,
		"total": float64(3), "db_available": float64(2), "on_sale": true}, r.json(t))

	n := 0
	require.Eventually(t, func() bool {
		n++
		return b.buy("", s.name("b"+string(rune('a'+n))), sku, 1).status == http.StatusCreated
	}, time.Second, 10*time.Millisecond, "instance b sells the restocked unit within a second")
	r = a.buy("", s.name("a-buyer"), sku, 1)
	require.Equal(t, http.StatusCreated, r.status, "%s", r.body)

	// The same request again adds nothing, in MySQL or in Redis.
	r = a.call(http.MethodPost, "/api/v1/admin/skus/"+sku+"/restock", restock, adminHeader())
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	require.Equal(t, false, r.json(t)["added"])
	require.Equal(t, inventoryOut{SKU: sku, Total: 3, Available: 0, DBAvailable: 0, Frozen: 3, IsSoldOut: true, BucketCount: 4},
		a.inventory(sku))
}

func TestAdminEndpoints(t *testing.T) {
	s := newStack(t, stackOptions{})
	api := s.api
	sku := s.name("admin")
	path := "/api/v1/admin/skus/" + sku

	for _, h := range []http.Header{
		nil,
		{"Authorization": {"Bearer wrong-token-0123456789"}},
		{"Authorization": {"Basic " + testAdmin}},
		{"Authorization": {testAdmin}},
	} {
		r := api.call(http.MethodPut, path, []byte(`{"total":1,"price":1}`), h)
		require.Equal(t, http.StatusUnauthorized, r.status, "%s", r.body)
		require.Equal(t, "UNAUTHORIZED", r.code(t))
		require.NotEmpty(t, r.header.Get("WWW-Authenticate"))
	}
	_, err := s.b.Orders.Inventory(t.Context(), sku)
	require.Error(t, err, "refused requests created nothing")

	r := api.call(http.MethodPut, path, []byte(`{"total":10,"price":2500}`), adminHeader())
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	require.Equal(t, map[string]any{"sku_id": sku, "total": float64(10), "price": float64(2500), "buckets": float64(16),
		"per_user_limit": float64(1), "redis_available": float64(10), "db_available": float64(10), "verified": true}, r.json(t))
	require.Equal(t, inventoryOut{SKU: sku, Total: 10, Available: 10, DBAvailable: 10, BucketCount: 16}, api.inventory(sku))

	bad := []struct {
		name, method, path, body string
		status                   int
		code                     string
	}{
		{"no total", http.MethodPut, path, `{"price":1}`, 400, "INVALID_REQUEST"},
		{"negative price", http.MethodPut, path, `{"total":1,"price":-1}`, 400, "INVALID_REQUEST"},
		{"too many buckets", http.MethodPut, path, `{"total":1,"price":1,"buckets":1025}`, 400, "INVALID_REQUEST"},
		{"zero limit", http.MethodPut, path, `{"total":1,"price":1,"per_user_limit":0}`, 400, "INVALID_REQUEST"},
		{"unknown field", http.MethodPut, path, `{"total":1,"price":1,"colour":"red"}`, 400, "INVALID_REQUEST"},
		{"bad sku", http.MethodPut, "/api/v1/admin/skus/a%7Bb", `{"total":1,"price":1}`, 400, "INVALID_REQUEST"},
		{"restock zero", http.MethodPost, path + "/restock", `{"quantity":0,"restock_id":"r"}`, 400, "INVALID_REQUEST"},
		{"restock no id", http.MethodPost, path + "/restock", `{"quantity":1}`, 400, "INVALID_REQUEST"},
		{"restock unknown sku", http.MethodPost, "/api/v1/admin/skus/" + s.name("ghost") + "/restock", `{"quantity":1,"restock_id":"r"}`, 404, "UNKNOWN_SKU"},
		{"preheat unknown sku", http.MethodPost, "/api/v1/admin/skus/" + s.name("ghost") + "/preheat", ``, 404, "UNKNOWN_SKU"},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			r := api.call(tt.method, tt.path, []byte(tt.body), adminHeader())
			require.Equal(t, tt.status, r.status, "%s", r.body)
			require.Equal(t, tt.code, r.code(t))
		})
	}

	// A restock request id reused for another quantity is refused.
	r = api.call(http.MethodPost, path+"/restock", []byte(`{"quantity":2,"restock_id":"`+s.name("r1")+`"}`), adminHeader())
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	r = api.call(http.MethodPost, path+"/restock", []byte(`{"quantity":3,"restock_id":"`+s.name("r1")+`"}`), adminHeader())
	require.Equal(t, http.StatusBadRequest, r.status, "%s", r.body)
	require.Equal(t, inventoryOut{SKU: sku, Total: 12, Available: 12, DBAvailable: 12, BucketCount: 16}, api.inventory(sku))

	// Preheat reloads Redis from MySQL.
	r = api.call(http.MethodPost, path+"/preheat", nil, adminHeader())
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	require.Equal(t, map[string]any{"sku_id": sku, "redis_available": float64(12), "db_available": float64(12), "verified": true}, r.json(t))

	// A reset while an unpaid order holds units is refused.
	require.Equal(t, http.StatusCreated, api.buy("", s.name("u"), sku, 1).status)
	r = api.call(http.MethodPut, path, []byte(`{"total":5,"price":1}`), adminHeader())
	require.Equal(t, http.StatusConflict, r.status, "%s", r.body)
	require.Equal(t, "SKU_IN_USE", r.code(t))
	// So is a preheat: it would overwrite the buckets of a live sale.
	r = api.call(http.MethodPost, path+"/preheat", nil, adminHeader())
	require.Equal(t, http.StatusConflict, r.status, "%s", r.body)
	require.Equal(t, "SKU_IN_USE", r.code(t))
}

func TestHealth(t *testing.T) {
	s := newStack(t, stackOptions{})
	r := s.api.call(http.MethodGet, "/healthz", nil, nil)
	require.Equal(t, http.StatusOK, r.status)
	r = s.api.call(http.MethodGet, "/readyz", nil, nil)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	require.Equal(t, map[string]any{"status": "ready", "temporal": "up", "redis": "up", "mysql": "up"}, r.json(t))
	r = s.api.call(http.MethodGet, "/metrics", nil, nil)
	require.Equal(t, http.StatusOK, r.status)
	require.Contains(t, r.json(t), "workflows_started")

	// The same API with Redis unreachable is alive and ready, degraded:
	// buy requests are decided on MySQL's stock (edge, "Redis down").
	deps := deps(t, s.b)
	deadRedis := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: 100 * time.Millisecond})
	t.Cleanup(func() { _ = deadRedis.Close() })
	deps.Redis, deps.Stock = deadRedis, inventory.New(deadRedis, inventory.Options{})
	api, err := httpapi.New(deps, s.apiConfig())
	require.NoError(t, err)
	broken := startInstance(t, api, false)
	r = broken.call(http.MethodGet, "/healthz", nil, nil)
	require.Equal(t, http.StatusOK, r.status)
	r = broken.call(http.MethodGet, "/readyz", nil, nil)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	require.Equal(t, map[string]any{"status": "degraded", "temporal": "up", "redis": "unreachable", "mysql": "up"}, r.json(t))
	// MySQL answers what Redis cannot: an unknown SKU is still unknown.
	r = broken.buy("", s.name("u"), s.name("no-such-sku"), 1)
	require.Equal(t, http.StatusNotFound, r.status, "%s", r.body)
	require.Equal(t, "UNKNOWN_SKU", r.code(t))
	require.Positive(t, api.Gate().Stats().Degraded)

	// Draining fails readiness so a load balancer moves away.
	s.api.server.Drain()
	r = s.api.call(http.MethodGet, "/readyz", nil, nil)
	require.Equal(t, http.StatusServiceUnavailable, r.status)
}

func TestConfig(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	_, err := httpapi.LoadConfig(env(nil))
	require.ErrorContains(t, err, "WEBHOOK_SECRET")
	require.ErrorContains(t, err, "ADMIN_TOKEN")
	_, err = httpapi.LoadConfig(env(map[string]string{"WEBHOOK_SECRET": "short", "ADMIN_TOKEN": testAdmin}))
	require.ErrorContains(t, err, "WEBHOOK_SECRET")

	require.ErrorContains(t, err, "BUYER_JWT_SECRET or BUYER_JWKS_URL must be set", "buyers must be identified")

	cfg, err := httpapi.LoadConfig(env(map[string]string{
		"WEBHOOK_SECRET": testSecret + " , " + testOldSecret, "ADMIN_TOKEN": testAdmin, "BUYER_JWT_SECRET": testBuyerKey,
		"HTTP_ADDR": "127.0.0.1:9999", "BUY_RATE_PER_USER": "7", "ORDER_RATE_PER_USER": "3", "EDGE_MAX_IN_FLIGHT": "4", "WAITLIST_PER_UNIT": "5",
		"BUYER_JWT_AUDIENCE": "shop", "ADMISSION_TARGET_LATENCY": "250ms", "ADMISSION_THROUGHPUT": "80.5",
		"ADMISSION_MAX_RETRY_AFTER": "4s", "SALE_PASSES_PER_INSTANCE": "40", "HTTP_H2C": "true",
	}))
	require.NoError(t, err)
	require.Equal(t, []string{testSecret, testOldSecret}, cfg.WebhookSecrets)
	require.Equal(t, "127.0.0.1:9999", cfg.Addr)
	require.Equal(t, 7, cfg.BuyRate)
	require.Equal(t, 3, cfg.OrderRate)
	require.Equal(t, int64(4), cfg.MaxInFlight)
	require.Equal(t, int64(40), cfg.SalePasses)
	require.Equal(t, int64(5), cfg.WaitlistPerUnit)
	require.Equal(t, 250*time.Millisecond, cfg.AdmissionTargetLatency)
	require.Equal(t, 80.5, cfg.AdmissionThroughput)
	require.Equal(t, 4*time.Second, cfg.AdmissionMaxRetryAfter)
	require.True(t, cfg.H2C)
	require.Equal(t, identity.Config{Secret: []byte(testBuyerKey), Audience: "shop"}, cfg.Identity)

	base := map[string]string{"WEBHOOK_SECRET": testSecret, "ADMIN_TOKEN": testAdmin, "BUYER_JWKS_URL": "https://idp.example/jwks.json"}
	cfg, err = httpapi.LoadConfig(env(base))
	require.NoError(t, err)
	require.Equal(t, ":8080", cfg.Addr)
	require.Equal(t, 5, cfg.BuyRate)
	require.Equal(t, 10, cfg.OrderRate)
	require.Equal(t, httpapi.DefaultWaitlistPerUnit, cfg.WaitlistPerUnit)
	require.Zero(t, cfg.AdmissionTargetLatency, "zero: the default target")
	require.Zero(t, cfg.AdmissionThroughput, "zero: learned")
	require.Zero(t, cfg.AdmissionMaxRetryAfter, "zero: edge.DefaultBusyRetryAfterMax")
	require.Zero(t, cfg.SalePasses, "zero: DefaultSalePassWindows windows")
	require.False(t, cfg.H2C, "HTTP/1.1 alone unless asked")
	off := maps.Clone(base)
	off["ADMISSION_TARGET_LATENCY"] = "off"
	cfg, err = httpapi.LoadConfig(env(off))
	require.NoError(t, err)
	require.Negative(t, cfg.AdmissionTargetLatency, "off turns the cap off")

	for k, v := range map[string]string{"BUY_RATE_PER_USER": "0", "ORDER_RATE_PER_USER": "x", "WAITLIST_PER_UNIT": "-1", "BUYER_JWT_SECRET": "too-short",
		"ADMISSION_TARGET_LATENCY": "0s", "ADMISSION_THROUGHPUT": "-3", "ADMISSION_MAX_RETRY_AFTER": "1500ms", "SALE_PASSES_PER_INSTANCE": "0", "HTTP_H2C": "yes please"} {
		bad := maps.Clone(base)
		bad[k] = v
		if k == "BUYER_JWT_SECRET" {
			delete(bad, "BUYER_JWKS_URL")
		}
		_, err = httpapi.LoadConfig(env(bad))
		require.ErrorContains(t, err, k)
	}
	_, err = httpapi.New(httpapi.Deps{}, httpapi.Config{AdminToken: testAdmin})
	require.Error(t, err, "no server without a webhook secret")
	_, err = httpapi.New(httpapi.Deps{}, httpapi.Config{AdminToken: testAdmin, WebhookSecrets: []string{testSecret}})
	require.ErrorContains(t, err, "no buyer token verifier")
}
