//go:build integration

package httpapi_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPinnedDoorAnswers pins, end to end, the exact answers (status,
// headers, {code, message}) the HTTP door gives on its own: routing,
// authentication, body decoding and the admin endpoints' refusals. They
// stayed the same when the codes were mapped in one table (issue 10).
func TestPinnedDoorAnswers(t *testing.T) {
	s := newStack(t, stackOptions{})
	api := s.api
	sku := s.name("sku")
	api.putSKU(sku, 10, 100, 4, 1)
	u := s.name("u")
	item := `{"sku_id":"` + sku + `","quantity":1}`
	restock := "/api/v1/admin/skus/" + sku + "/restock"
	r := api.call(http.MethodPost, restock, []byte(`{"quantity":2,"restock_id":"r1"}`), adminHeader())
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)

	tests := []struct {
		name         string
		method, path string
		body         string
		header       http.Header
		status       int
		answer       string
		headers      map[string]string
	}{
		{"no such endpoint", http.MethodGet, "/api/v1/nope", "", nil, 404,
			`{"code":"NOT_FOUND","message":"no such endpoint"}`, nil},
		{"wrong method", http.MethodGet, "/api/v1/orders", "", nil, 405,
			`{"code":"METHOD_NOT_ALLOWED","message":"method not allowed; use POST"}`, map[string]string{"Allow": "POST"}},
		{"no admin token", http.MethodPost, "/api/v1/admin/skus/" + sku + "/preheat", "", nil, 401,
			`{"code":"UNAUTHORIZED","message":"missing or wrong admin bearer token"}`,
			map[string]string{"WWW-Authenticate": `Bearer realm="flashsale-admin"`}},
		{"no buyer token", http.MethodPost, "/api/v1/orders", `{"items":[` + item + `]}`, nil, 401,
			`{"code":"UNAUTHENTICATED","message":"missing, expired or invalid buyer token"}`,
			map[string]string{"WWW-Authenticate": `Bearer realm="flashsale"`}},
		{"another user", http.MethodPost, "/api/v1/orders", `{"user_id":"someone-else","items":[` + item + `]}`, buyerHeader(t, u), 403,
			`{"code":"USER_MISMATCH","message":"user_id differs from the buyer the token names; leave it out or send your own"}`, nil},
		{"malformed json", http.MethodPost, "/api/v1/orders", `buy me`, buyerHeader(t, u), 400,
			`{"code":"INVALID_REQUEST","message":"malformed JSON"}`, nil},
		{"unknown field", http.MethodPost, "/api/v1/orders", `{"items":[` + item + `],"coupon":1}`, buyerHeader(t, u), 400,
			`{"code":"INVALID_REQUEST","message":"unknown field \"coupon\""}`, nil},
		{"reserved key", http.MethodPost, "/api/v1/orders", `{"client_order_id":"wl-x","items":[` + item + `]}`, buyerHeader(t, u), 400,
			`{"code":"INVALID_REQUEST","message":"client_order_id must not start with wl-, reserved for waitlist offers"}`, nil},
		{"the key named order_id", http.MethodPost, "/api/v1/orders", `{"order_id":"cart-7","items":[` + item + `]}`, buyerHeader(t, u), 400,
			`{"code":"INVALID_REQUEST","message":"order_id is not a buy request field: send your idempotency key as client_order_id (the answer's order_id is the order's id, for reading, cancelling and paying it)"}`, nil},
		{"zero quantity", http.MethodPost, "/api/v1/orders", `{"items":[{"sku_id":"` + sku + `","quantity":0}]}`, buyerHeader(t, u), 400,
			`{"code":"INVALID_REQUEST","message":"quantity of \"` + sku + `\" must be 1-1000"}`, nil},
		{"bad sku id", http.MethodPost, "/api/v1/orders", `{"items":[{"sku_id":"a b","quantity":1}]}`, buyerHeader(t, u), 400,
			`{"code":"INVALID_REQUEST","message":"sku_id must be 1-64 characters of A-Z a-z 0-9 . _ : @ - (not . or ..)"}`, nil},
		{"body over 64 KiB", http.MethodPost, "/api/v1/orders", `{"pad":"` + strings.Repeat("x", 64<<10) + `"}`, buyerHeader(t, u), 413,
			`{"code":"PAYLOAD_TOO_LARGE","message":"request body larger than 64 KiB"}`, nil},
		{"unknown sku", http.MethodGet, "/api/v1/inventory/" + s.name("ghost"), "", nil, 404,
			`{"code":"UNKNOWN_SKU","message":"unknown sku"}`, nil},
		{"unknown order", http.MethodGet, "/api/v1/orders/" + s.name("ghost"), "", adminHeader(), 404,
			`{"code":"ORDER_NOT_FOUND","message":"order not found"}`, nil},
		{"restock request id reused", http.MethodPost, restock, `{"quantity":3,"restock_id":"r1"}`, adminHeader(), 400,
			`{"code":"INVALID_REQUEST","message":"restock_id was already used with a different quantity"}`, nil},
		{"restock quantity", http.MethodPost, restock, `{"quantity":0,"restock_id":"r2"}`, adminHeader(), 400,
			`{"code":"INVALID_REQUEST","message":"quantity must be 1-1000000000"}`, nil},
		{"buckets missing", http.MethodPost, "/api/v1/admin/skus/" + sku + "/buckets", `{}`, adminHeader(), 400,
			`{"code":"INVALID_REQUEST","message":"buckets is required, 1-1024"}`, nil},
		{"buckets of an unknown sku", http.MethodPost, "/api/v1/admin/skus/" + s.name("ghost") + "/buckets", `{"buckets":2}`, adminHeader(), 404,
			`{"code":"UNKNOWN_SKU","message":"unknown sku"}`, nil},
		{"sku without total", http.MethodPut, "/api/v1/admin/skus/" + s.name("new"), `{"price":1}`, adminHeader(), 400,
			`{"code":"INVALID_REQUEST","message":"total is required, 0-1000000000"}`, nil},
		{"unsigned callback", http.MethodPost, "/api/v1/payments/callback", `{}`, nil, 401,
			`{"code":"BAD_SIGNATURE","message":"bad signature: missing X-Signature header"}`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var body []byte
			if tt.body != "" {
				body = []byte(tt.body)
			}
			r := api.call(tt.method, tt.path, body, tt.header)
			require.Equal(t, tt.status, r.status, "%s", r.body)
			require.JSONEq(t, tt.answer, string(r.body))
			for k, v := range tt.headers {
				require.Equal(t, v, r.header.Get(k), k)
			}
			require.Empty(t, r.header.Get("Retry-After"))
		})
	}
}
