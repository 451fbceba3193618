//go:build integration

package httpapi_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/internal/edge"
)

func TestBuyReadAndDuplicate(t *testing.T) {
	s := newStack(t, stackOptions{})
	api := s.api
	sku := s.name("phone")
	api.putSKU(sku, 5, 4999, 4, 1)

	key := s.name("o1")
	r := api.buy(key, s.name("alice"), sku, 1)
	require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
	created := r.json(t)
	// The order's id is the buyer's key made theirs alone.
	id := orderID(s.name("alice"), key)
	require.Equal(t, id, created["order_id"])
	require.Equal(t, key, created["client_order_id"])
	require.Equal(t, "PENDING_PAYMENT", created["status"])
	require.Equal(t, float64(4999), created["amount"])
	payBy, err := time.Parse(time.RFC3339Nano, created["pay_by"].(string))
	require.NoError(t, err)
	require.WithinDuration(t, time.Now().Add(15*time.Minute), payBy, time.Minute)
	require.Len(t, created, 5)

	// The same key again: the same answer, and no second unit.
	again := api.buy(key, s.name("alice"), sku, 1)
	require.Equal(t, http.StatusCreated, again.status)
	require.JSONEq(t, string(r.body), string(again.body))
	require.Equal(t, inventoryOut{SKU: sku, Total: 5, Available: 4, DBAvailable: 4, Frozen: 1, BucketCount: 4}, api.inventory(sku))

	// Somebody else's equal key is their own order, not this one.
	r = api.buy(key, s.name("mallory"), sku, 1)
	require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
	require.NotEqual(t, id, r.json(t)["order_id"])

	o := api.order(id)
	require.Equal(t, id, o["order_id"])
	require.Equal(t, s.name("alice"), o["user_id"])
	require.Equal(t, "PENDING_PAYMENT", o["status"])
	require.Equal(t, []any{map[string]any{"sku_id": sku, "quantity": float64(1)}}, o["items"])
	require.NotContains(t, o, "refund")

	// The per-user limit (1): the edge answers the second order of the same
	// buyer from Redis's count, before any workflow or unit (MySQL's own
	// check stays the final guard: orderdb's limit tests).
	r = api.buy(s.name("o2"), s.name("alice"), sku, 1)
	require.Equal(t, http.StatusUnprocessableEntity, r.status, "%s", r.body)
	require.Equal(t, "LIMIT_EXCEEDED", r.code(t))
	require.Equal(t, inventoryOut{SKU: sku, Total: 5, Available: 3, DBAvailable: 3, Frozen: 2, BucketCount: 4}, api.inventory(sku))
	r = api.call(http.MethodGet, "/api/v1/orders/"+orderID(s.name("alice"), s.name("o2")), nil, adminHeader())
	require.Equal(t, http.StatusNotFound, r.status, "no order was started: %s", r.body)

	// Without an order id the server picks one (a UUIDv7).
	r = api.buy("", s.name("bob"), sku, 1)
	require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
	u, err := uuid.Parse(r.json(t)["order_id"].(string))
	require.NoError(t, err)
	require.Equal(t, uuid.Version(7), u.Version())

	r = api.call(http.MethodGet, "/api/v1/orders/"+s.name("nope"), nil, adminHeader())
	require.Equal(t, http.StatusNotFound, r.status)
	require.Equal(t, "ORDER_NOT_FOUND", r.code(t))

	m := api.metrics()
	require.Equal(t, int64(3), m.WorkflowsStarted, "o1, mallory's and bob's; repeats and o2 (over the limit) started nothing")
	require.Equal(t, int64(1), m.Edge.Duplicates)
}

func TestSoldOut(t *testing.T) {
	s := newStack(t, stackOptions{})
	api := s.api
	sku := s.name("last")
	api.putSKU(sku, 1, 100, 4, 1)

	first := api.buy(s.name("o1"), s.name("u1"), sku, 1)
	require.Equal(t, http.StatusCreated, first.status, "%s", first.body)

	for i, user := range []string{"u2", "u3", "u4"} {
		r := api.buy(s.name("x"+user), s.name(user), sku, 1)
		require.Equal(t, http.StatusConflict, r.status, "%s", r.body)
		require.Equal(t, "SOLD_OUT", r.code(t), "buyer %d", i)
	}
	// A repeat of the order that got the unit still gets its answer.
	again := api.buy(s.name("o1"), s.name("u1"), sku, 1)
	require.Equal(t, http.StatusCreated, again.status)
	require.JSONEq(t, string(first.body), string(again.body))

	m := api.metrics()
	require.Equal(t, int64(1), m.WorkflowsStarted, "sold-out buyers never reached Temporal")
	require.Equal(t, int64(1), m.Edge.SoldOutStock, "the first saw the empty buckets")
	require.Equal(t, int64(2), m.Edge.SoldOutLocal, "the others stopped at the in-process cache")
	inv := api.inventory(sku)
	require.True(t, inv.IsSoldOut)
	require.Equal(t, int64(1), inv.Frozen)
}

// Every kind of bad input is answered 4xx before it reaches Temporal,
// Redis's stock or MySQL, and leaves nothing behind.
func TestBadBuyRequests(t *testing.T) {
	s := newStack(t, stackOptions{})
	api := s.api
	sku := s.name("sku")
	api.putSKU(sku, 10, 100, 4, 1)
	item := `{"sku_id":"` + sku + `","quantity":1}`
	user := `"user_id":"` + s.name("u") + `"`

	tests := []struct {
		name   string
		body   string
		status int
		code   string
	}{
		{"empty body", ``, 400, "INVALID_REQUEST"},
		{"not json", `buy me a phone`, 400, "INVALID_REQUEST"},
		{"cut short", `{` + user + `,"items":[`, 400, "INVALID_REQUEST"},
		{"array", `[` + item + `]`, 400, "INVALID_REQUEST"},
		{"unknown field", `{` + user + `,"items":[` + item + `],"coupon":"FREE"}`, 400, "INVALID_REQUEST"},
		{"unknown item field", `{` + user + `,"items":[{"sku_id":"` + sku + `","quantity":1,"price":0}]}`, 400, "INVALID_REQUEST"},
		{"quantity as string", `{` + user + `,"items":[{"sku_id":"` + sku + `","quantity":"1"}]}`, 400, "INVALID_REQUEST"},
		{"fractional quantity", `{` + user + `,"items":[{"sku_id":"` + sku + `","quantity":1.5}]}`, 400, "INVALID_REQUEST"},
		{"zero quantity", `{` + user + `,"items":[{"sku_id":"` + sku + `","quantity":0}]}`, 400, "INVALID_REQUEST"},
		{"negative quantity", `{` + user + `,"items":[{"sku_id":"` + sku + `","quantity":-1}]}`, 400, "INVALID_REQUEST"},
		{"absurd quantity", `{` + user + `,"items":[{"sku_id":"` + sku + `","quantity":1000000}]}`, 400, "INVALID_REQUEST"},
		{"overflowing quantity", `{` + user + `,"items":[{"sku_id":"` + sku + `","quantity":99999999999999999999}]}`, 400, "INVALID_REQUEST"},
		{"no items", `{` + user + `,"items":[]}`, 400, "INVALID_REQUEST"},
		{"same sku twice", `{` + user + `,"items":[` + item + `,` + item + `]}`, 400, "INVALID_REQUEST"},
		{"key .", `{"client_order_id":".",` + user + `,"items":[` + item + `]}`, 400, "INVALID_REQUEST"},
		{"key ..", `{"client_order_id":"..",` + user + `,"items":[` + item + `]}`, 400, "INVALID_REQUEST"},
		{"user as number", `{"user_id":7,"items":[` + item + `]}`, 400, "INVALID_REQUEST"},
		{"empty key", `{"client_order_id":"",` + user + `,"items":[` + item + `]}`, 400, "INVALID_REQUEST"},
		{"oversized key", `{"client_order_id":"` + strings.Repeat("o", 65) + `",` + user + `,"items":[` + item + `]}`, 400, "INVALID_REQUEST"},
		{"key with a space", `{"client_order_id":"a b",` + user + `,"items":[` + item + `]}`, 400, "INVALID_REQUEST"},
		{"sku with a brace", `{` + user + `,"items":[{"sku_id":"a}b","quantity":1}]}`, 400, "INVALID_REQUEST"},
		{"oversized sku", `{` + user + `,"items":[{"sku_id":"` + strings.Repeat("s", 65) + `","quantity":1}]}`, 400, "INVALID_REQUEST"},
		{"trailing data", `{` + user + `,"items":[` + item + `]} {}`, 400, "INVALID_REQUEST"},
		{"body over 64 KiB", `{` + user + `,"items":[` + item + `],"pad":"` + strings.Repeat("x", 64<<10) + `"}`, 413, "PAYLOAD_TOO_LARGE"},
		{"unknown sku", `{` + user + `,"items":[{"sku_id":"` + s.name("ghost") + `","quantity":1}]}`, 404, "UNKNOWN_SKU"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := api.call(http.MethodPost, "/api/v1/orders", []byte(tt.body), buyerHeader(t, s.name("u")))
			require.Equal(t, tt.status, r.status, "%s", r.body)
			require.Equal(t, tt.code, r.code(t))
		})
	}
	m := api.metrics()
	require.Zero(t, m.WorkflowsStarted)
	require.Equal(t, int64(1), m.Edge.Requests, "only the unknown SKU got as far as the edge")
	require.Zero(t, m.Edge.InFlightUnits)
	require.Equal(t, inventoryOut{SKU: sku, Total: 10, Available: 10, DBAvailable: 10, BucketCount: 4}, api.inventory(sku))
	require.Zero(t, s.countWorkflows(sku))
	require.Zero(t, s.countWorkflows(s.name("ghost")))
}

func TestRouting(t *testing.T) {
	s := newStack(t, stackOptions{})
	tests := []struct {
		method, path string
		status       int
		code         string
	}{
		{http.MethodGet, "/api/v1/nope", 404, "NOT_FOUND"},
		{http.MethodGet, "/api/v1/orders", 405, "METHOD_NOT_ALLOWED"},
		{http.MethodDelete, "/api/v1/orders/x", 405, "METHOD_NOT_ALLOWED"},
		{http.MethodGet, "/api/v1/orders/x/cancel", 405, "METHOD_NOT_ALLOWED"},
		{http.MethodGet, "/api/v1/orders/" + strings.Repeat("x", 65), 400, "INVALID_REQUEST"},
		{http.MethodGet, "/api/v1/orders/a%7Bb", 400, "INVALID_REQUEST"},
		{http.MethodGet, "/api/v1/inventory/a%20b", 400, "INVALID_REQUEST"},
		{http.MethodGet, "/api/v1/inventory/" + s.name("ghost"), 404, "UNKNOWN_SKU"},
		{http.MethodPost, "/api/v1/orders/" + s.name("ghost") + "/cancel", 404, "ORDER_NOT_FOUND"},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			r := s.api.call(tt.method, tt.path, nil, adminHeader())
			require.Equal(t, tt.status, r.status, "%s", r.body)
			require.Equal(t, tt.code, r.code(t))
			if tt.status == http.StatusMethodNotAllowed {
				require.NotEmpty(t, r.header.Get("Allow"))
			}
		})
	}
}

func TestRateLimited(t *testing.T) {
	s := newStack(t, stackOptions{buyRate: 5})
	sku := s.name("ghost") // unknown: the answers cost no workflow
	var codes []string
	for i := range 8 {
		r := s.api.buy("", s.name("spammer"), sku, 1)
		codes = append(codes, r.code(t))
		if r.status == http.StatusTooManyRequests {
			require.Equal(t, "1", r.header.Get("Retry-After"), "request %d", i)
		}
	}
	require.Equal(t, []string{"UNKNOWN_SKU", "UNKNOWN_SKU", "UNKNOWN_SKU", "UNKNOWN_SKU", "UNKNOWN_SKU",
		"RATE_LIMITED", "RATE_LIMITED", "RATE_LIMITED"}, codes)
	// The budget is per user.
	r := s.api.buy("", s.name("someone-else"), sku, 1)
	require.Equal(t, "UNKNOWN_SKU", r.code(t))
}

func TestBusy(t *testing.T) {
	s := newStack(t, stackOptions{maxInFlight: 1})
	sku := s.name("hot")
	s.api.putSKU(sku, 10, 100, 4, 1)

	// Another buyer's order is in flight and the window is one unit wide.
	ctx := context.Background()
	held, err := s.api.server.Gate().Admit(ctx, edge.Request{
		OrderID: s.name("held"), UserID: s.name("first"), Items: []flashsale.Item{{SKU: sku, Quantity: 1}},
	})
	require.NoError(t, err)
	r := s.api.buy(s.name("o1"), s.name("u1"), sku, 1)
	require.Equal(t, http.StatusTooManyRequests, r.status, "%s", r.body)
	require.Equal(t, "BUSY", r.code(t))
	require.Equal(t, "1", r.header.Get("Retry-After"))

	held.Done(ctx, false)
	r = s.api.buy(s.name("o1"), s.name("u1"), sku, 1)
	require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
}

func TestCancel(t *testing.T) {
	s := newStack(t, stackOptions{})
	api := s.api
	sku := s.name("sku")
	api.putSKU(sku, 2, 100, 2, 1)
	id := api.mustBuy(s.name("o1"), s.name("u1"), sku, 1)

	r := api.cancel(s.name("u1"), id)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	require.Equal(t, map[string]any{"order_id": id, "status": "CANCELLED"}, r.json(t))
	require.Equal(t, inventoryOut{SKU: sku, Total: 2, Available: 2, DBAvailable: 2, BucketCount: 2}, api.inventory(sku))
	o := api.order(id)
	require.Equal(t, "CANCELLED", o["status"])
	require.Equal(t, "CANCELLED_BY_BUYER", o["reason"])

	// Already cancelled: this request changed nothing.
	r = api.cancel(s.name("u1"), id)
	require.Equal(t, http.StatusConflict, r.status)
	require.Equal(t, "ORDER_CLOSED", r.code(t))

	// The cancelled buyer may buy again: closed orders do not count
	// against the per-user limit.
	require.Equal(t, http.StatusCreated, api.buy(s.name("o2"), s.name("u1"), sku, 1).status)
}
