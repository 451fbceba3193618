//go:build integration

package httpapi_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/flashsale/flashsale"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func (in *instance) joinWaitlist(sku, user string) response {
	in.t.Helper()
	return in.call(http.MethodPost, "/api/v1/skus/"+sku+"/waitlist", mustJSON(in.t, map[string]any{"user_id": user}), buyerHeader(in.t, user))
}

func TestWaitlistJoinAnswers(t *testing.T) {
	s := newStack(t, stackOptions{})
	api := s.api
	sku := s.name("wl")
	api.putSKU(sku, 1, 100, 2, 1)

	r := api.joinWaitlist(sku, s.name("u1"))
	require.Equal(t, http.StatusConflict, r.status, "%s", r.body)
	require.Equal(t, "NOT_SOLD_OUT", r.code(t))

	require.Equal(t, http.StatusCreated, api.buy(s.name("o1"), s.name("u1"), sku, 1).status)
	r = api.joinWaitlist(sku, s.name("u2"))
	require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
	require.Equal(t, map[string]any{"sku_id": sku, "user_id": s.name("u2"), "position": float64(1)}, r.json(t))
	r = api.joinWaitlist(sku, s.name("u3"))
	require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
	require.Equal(t, float64(2), r.json(t)["position"])
	// Joining twice keeps the place.
	r = api.joinWaitlist(sku, s.name("u2"))
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	require.Equal(t, float64(1), r.json(t)["position"])

	for _, tc := range []struct {
		name, path, body string
		status           int
		code             string
	}{
		{"another user", "/api/v1/skus/" + sku + "/waitlist", `{"user_id":"someone-else"}`, 403, "USER_MISMATCH"},
		{"unknown field", "/api/v1/skus/" + sku + "/waitlist", `{"user_id":"u","qty":1}`, 400, "INVALID_REQUEST"},
		{"not json", "/api/v1/skus/" + sku + "/waitlist", `user`, 400, "INVALID_REQUEST"},
		{"bad sku", "/api/v1/skus/a%7Bb/waitlist", `{}`, 400, "INVALID_REQUEST"},
		{"unknown sku", "/api/v1/skus/" + s.name("none") + "/waitlist", ``, 404, "UNKNOWN_SKU"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := api.call(http.MethodPost, tc.path, []byte(tc.body), buyerHeader(t, s.name("u9")))
			require.Equal(t, tc.status, r.status, "%s", r.body)
			require.Equal(t, tc.code, r.code(t))
		})
	}
	r = api.call(http.MethodGet, "/api/v1/skus/"+sku+"/waitlist", nil, nil)
	require.Equal(t, http.StatusMethodNotAllowed, r.status)

	// Offer ids are reserved: a buyer cannot take the one an offer of
	// o1's unit would use.
	r = api.buy(flashsale.WaitlistOrderID(s.name("o1")), s.name("u4"), sku, 1)
	require.Equal(t, http.StatusBadRequest, r.status, "%s", r.body)
	require.Equal(t, "INVALID_REQUEST", r.code(t))
}

// TestWaitlistEndToEnd runs the offer through the real worker, Redis, MySQL
// and Temporal: one unit; A holds it, B is turned away and joins the
// waitlist; A cancels and B holds a PENDING_PAYMENT order for the unit
// while open sale stays sold out; B lets it expire and the unit is back on
// open sale.
func TestWaitlistEndToEnd(t *testing.T) {
	s := newStack(t, stackOptions{paymentTimeout: 6 * time.Second})
	api := s.api
	sku := s.name("wl")
	api.putSKU(sku, 1, 100, 4, 1)
	a, b, c := s.name("ua"), s.name("ub"), s.name("uc")
	orderA := s.name("oa")

	require.Equal(t, http.StatusCreated, api.buy(orderA, a, sku, 1).status)
	r := api.buy(s.name("ob"), b, sku, 1)
	require.Equal(t, http.StatusConflict, r.status, "%s", r.body)
	require.Equal(t, "SOLD_OUT", r.code(t))
	r = api.joinWaitlist(sku, b)
	require.Equal(t, http.StatusCreated, r.status, "%s", r.body)

	r = api.cancel(a, orderA)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)

	offer := flashsale.WaitlistOrderID(orderA)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		r := api.call(http.MethodGet, "/api/v1/orders/"+offer, nil, buyerHeader(t, b))
		if !assert.Equal(c, http.StatusOK, r.status) {
			return
		}
		o := r.json(t)
		assert.Equal(c, "PENDING_PAYMENT", o["status"])
		assert.Equal(c, b, o["user_id"])
	}, 10*time.Second, 50*time.Millisecond)
	inv := api.inventory(sku)
	require.Equal(t, int64(0), inv.Available, "the unit never went back on open sale")
	require.Equal(t, int64(0), inv.DBAvailable)
	require.Equal(t, int64(1), inv.Frozen)
	require.True(t, inv.IsSoldOut)
	r = api.buy(s.name("oc1"), c, sku, 1)
	require.Equal(t, http.StatusConflict, r.status, "%s", r.body)
	require.Equal(t, "SOLD_OUT", r.code(t))
	require.Equal(t, "CANCELLED", api.order(orderA)["status"])

	// B does not pay: the offer expires and, nobody else waiting, the unit
	// is back on open sale.
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Equal(c, "EXPIRED", api.order(offer)["status"])
		inv := api.inventory(sku)
		assert.Equal(c, int64(1), inv.Available)
		assert.Equal(c, int64(1), inv.DBAvailable)
		assert.Equal(c, int64(0), inv.Frozen)
	}, 30*time.Second, 100*time.Millisecond)
	attempt := 0
	require.EventuallyWithT(t, func(col *assert.CollectT) {
		// A new order id per attempt: a repeated id gets its first answer.
		attempt++
		r := api.buy(s.name(fmt.Sprintf("oc2-%d", attempt)), c, sku, 1)
		assert.Equal(col, http.StatusCreated, r.status, "%s", r.body)
	}, 5*time.Second, 100*time.Millisecond)
}
