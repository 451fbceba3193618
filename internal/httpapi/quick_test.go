//go:build integration

package httpapi_test

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// forgedToken is a JWT naming user whose signature is wrong: its subject
// can be read, but it verifies for nobody.
func forgedToken(user string) http.Header {
	enc := base64.RawURLEncoding
	tok := enc.EncodeToString([]byte(`{"alg":"HS256","typ":"JWT"}`)) + "." +
		enc.EncodeToString([]byte(`{"sub":"`+user+`","exp":4102444800}`)) + "." + enc.EncodeToString([]byte("not a signature"))
	return http.Header{"Authorization": {"Bearer " + tok}}
}

// sellOut puts sku on sale with one unit, sells it to a buyer with key,
// and has another buyer refused, so the instance holds sku as sold out.
// It returns the sale's first answer.
func sellOut(t *testing.T, s *stack, in *instance, sku, key, buyer string) response {
	t.Helper()
	in.putSKU(sku, 1, 100, 2, 1)
	first := in.buyRetrying(key, buyer, sku, 1)
	require.Equal(t, http.StatusCreated, first.status, "%s", first.body)
	r := in.buy("", s.name("u-late"), sku, 1)
	require.Equal(t, http.StatusConflict, r.status, "%s", r.body)
	require.Equal(t, "SOLD_OUT", r.code(t))
	return first
}

// A buy of a SKU held as sold out is answered 409 SOLD_OUT without a
// token (the answer GET /api/v1/inventory/{sku} already gives anyone);
// a SKU on sale still wants one. The quick answer is counted as the
// edge's sold_out_local, and is the full path's answer to the byte.
func TestSoldOutAnswerNeedsNoToken(t *testing.T) {
	s := newStack(t, stackOptions{localTTL: time.Hour})
	api := s.api
	sold, onSale := s.name("gone"), s.name("there")
	sellOut(t, s, api, sold, s.name("k1"), s.name("u1"))
	api.putSKU(onSale, 5, 100, 2, 1)

	before := api.metrics()
	body := buyBody(t, "", "", sold, 1)
	full := api.call(http.MethodPost, "/api/v1/orders", body, buyerHeader(t, s.name("u2")))
	for _, h := range []http.Header{nil, forgedToken(s.name("u1")), {"X-Request-Id": {"caller-id-1"}}} {
		r := api.call(http.MethodPost, "/api/v1/orders", body, h)
		require.Equal(t, http.StatusConflict, r.status, "%s", r.body)
		require.Equal(t, "SOLD_OUT", r.code(t))
		require.Equal(t, string(full.body), string(r.body), "the same bytes as the full path's answer")
		require.Equal(t, "no-store", r.header.Get("Cache-Control"))
		require.Equal(t, "nosniff", r.header.Get("X-Content-Type-Options"))
		require.Equal(t, h.Get("X-Request-Id"), r.header.Get("X-Request-Id"), "a caller's id is echoed, none minted")
	}
	after := api.metrics()
	require.Equal(t, before.Edge.SoldOutLocal+4, after.Edge.SoldOutLocal)
	require.Equal(t, before.Edge.Requests+4, after.Edge.Requests)
	require.Equal(t, before.Responses["409"]+4, after.Responses["409"])

	r := api.call(http.MethodPost, "/api/v1/orders", buyBody(t, "", "", onSale, 1), nil)
	require.Equal(t, http.StatusUnauthorized, r.status, "%s", r.body)
	// Several lines take the full path (the rate limit comes first).
	r = api.call(http.MethodPost, "/api/v1/orders", mustJSON(t, map[string]any{"items": []map[string]any{
		{"sku_id": sold, "quantity": 1}, {"sku_id": onSale, "quantity": 1}}}), nil)
	require.Equal(t, http.StatusUnauthorized, r.status, "%s", r.body)
	// So does a body the full path would refuse.
	r = api.call(http.MethodPost, "/api/v1/orders", []byte(`{"items":[{"sku_id":"`+sold+`","quantity":1}],"extra":1}`), buyerHeader(t, s.name("u2")))
	require.Equal(t, http.StatusBadRequest, r.status, "%s", r.body)
}

// A repeat of an order placed before the sell-out gets its first answer,
// with its buyer's token; without it, or as another buyer (whose equal key
// is their own order), it is SOLD_OUT, and a forged token naming the buyer
// learns nothing more (409, not 401).
func TestRepeatAfterSellOutGetsItsFirstAnswer(t *testing.T) {
	s := newStack(t, stackOptions{localTTL: time.Hour})
	api := s.api
	sku, key, buyer := s.name("rep"), s.name("cart-1"), s.name("ua")
	first := sellOut(t, s, api, sku, key, buyer)

	r := api.buy(key, buyer, sku, 1)
	require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
	require.JSONEq(t, string(first.body), string(r.body))
	r = api.call(http.MethodPost, "/api/v1/orders", buyBody(t, key, "", sku, 1), buyerHeader(t, buyer))
	require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
	require.JSONEq(t, string(first.body), string(r.body))

	// quick: answered by the quick path (which mints no request id), its
	// snapshot of the SKU's placed ids showing the key is not a repeat of
	// this caller's; the forged token names the buyer, so the full path
	// answers it, and without a valid token that is SOLD_OUT too.
	for _, c := range []struct {
		name  string
		h     http.Header
		quick bool
	}{
		{"no token", nil, true}, {"another buyer", buyerHeader(t, s.name("ub")), true},
		{"forged token", forgedToken(buyer), false},
	} {
		r := api.call(http.MethodPost, "/api/v1/orders", buyBody(t, key, "", sku, 1), c.h)
		require.Equal(t, http.StatusConflict, r.status, "%s: %s", c.name, r.body)
		require.Equal(t, "SOLD_OUT", r.code(t), c.name)
		require.Equal(t, c.quick, r.header.Get("X-Request-Id") == "", c.name)
	}
	// The sale page counts every one of those answers, whichever path gave
	// it: the sale's 201 and its two repeats; the late buyer's 409 and the
	// three above (two quick, one the full path's answer to a possible
	// repeat).
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		r := api.call(http.MethodGet, "/api/v1/skus/"+sku+"/live", nil, nil)
		var live struct {
			Traffic struct{ Answers map[string]int64 }
		}
		require.NoError(t, json.Unmarshal(r.body, &live))
		assert.Equal(c, int64(3), live.Traffic.Answers["201"], "%v", live.Traffic.Answers)
		assert.Equal(c, int64(4), live.Traffic.Answers["409"], "%v", live.Traffic.Answers)
	}, 10*time.Second, 200*time.Millisecond)
}

// A restock ends the quick answer on every instance within a second, by
// Pub/Sub: the local TTL here is an hour.
func TestRestockEndsQuickAnswerEverywhere(t *testing.T) {
	s := newStack(t, stackOptions{localTTL: time.Hour})
	a, b := s.api, s.secondInstance()
	sku := s.name("re")
	sellOut(t, s, a, sku, s.name("k"), s.name("u1"))
	r := b.buy("", s.name("u3"), sku, 1)
	require.Equal(t, http.StatusConflict, r.status, "%s", r.body)
	for _, in := range []*instance{a, b} {
		r := in.call(http.MethodPost, "/api/v1/orders", buyBody(t, "", "", sku, 1), nil)
		require.Equal(t, http.StatusConflict, r.status, "%s", r.body)
	}

	r = a.call(http.MethodPost, "/api/v1/admin/skus/"+sku+"/restock",
		mustJSON(t, map[string]any{"quantity": 3, "restock_id": s.name("r1")}), adminHeader())
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	start := time.Now()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		for _, in := range []*instance{a, b} {
			r := in.call(http.MethodPost, "/api/v1/orders", buyBody(t, "", "", sku, 1), nil)
			assert.Equal(c, http.StatusUnauthorized, r.status, "%s", r.body)
		}
	}, time.Second, 10*time.Millisecond)
	t.Logf("quick answer gone on both instances after %v", time.Since(start))
	require.False(t, strings.Contains(string(a.buy("", s.name("u4"), sku, 1).body), "SOLD_OUT"))
}
