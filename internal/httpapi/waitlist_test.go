//go:build integration

package httpapi_test

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/internal/audit"
	"github.com/flashsale/flashsale/internal/httpapi"
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
	orderA := api.mustBuy(s.name("oa"), a, sku, 1)
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

// TestWaitlistOfferIDsCannotCollide is issue 21's first defect. Offer ids
// were "wl-" + the released id, or "wl-" + 32 hex digits of its SHA-256 when
// that was too long, so one buyer holding a 62-character order X and the
// order Y named by those digits controlled two releases that named one offer:
// the second offer's run took over the first one's order (another buyer's
// paid order of another SKU), or was dropped. The orders are placed through
// the buy use case (the HTTP door's own id rules are not what is tested),
// then everything runs on the real worker, Redis, MySQL and Temporal.
func TestWaitlistOfferIDsCannotCollide(t *testing.T) {
	s := newStack(t, stackOptions{})
	api := s.api
	ctx := t.Context()
	skuX, skuY := s.name("wlx"), s.name("wly")
	api.putSKU(skuX, 1, 100, 2, 1)
	api.putSKU(skuY, 1, 700, 2, 1)
	attacker, w1, w2 := s.name("attacker"), s.name("w1"), s.name("w2")

	x := s.name("x") + strings.Repeat("x", flashsale.MaxIDLength-2-len(s.name("x")))
	sum := sha256.Sum256([]byte(x))
	y := hex.EncodeToString(sum[:16]) // once both X's and Y's offer were wl-<y>
	place := httpapi.FromBackend(s.b).Orders
	for _, o := range []flashsale.Order{
		{OrderID: x, UserID: attacker, Items: []flashsale.Item{{SKU: skuX, Quantity: 1}}},
		{OrderID: y, UserID: attacker, Items: []flashsale.Item{{SKU: skuY, Quantity: 1}}},
	} {
		res, err := place.PlaceOrder(ctx, o)
		require.NoError(t, err)
		require.Equal(t, flashsale.StatusPendingPayment, res.Status, "%+v", res)
	}
	require.Equal(t, http.StatusCreated, api.joinWaitlist(skuX, w1).status)
	require.Equal(t, http.StatusCreated, api.joinWaitlist(skuY, w2).status)

	// X is released: W1 is offered its unit and pays for it.
	require.Equal(t, http.StatusOK, api.cancel(attacker, x).status)
	offerX := api.offerOf(skuX, w1)
	api.pendingOrder(offerX, w1, 100)
	r := api.pay(callback{OrderID: offerX, TransactionID: s.name("t-w1"), Amount: 100, Status: "SUCCESS"})
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	require.Equal(t, "PAID", api.order(offerX)["status"])

	// Y is released: W2 gets an offer of their own, of Y's SKU at its price.
	require.Equal(t, http.StatusOK, api.cancel(attacker, y).status)
	offerY := api.offerOf(skuY, w2)
	api.pendingOrder(offerY, w2, 700)
	require.NotEqual(t, offerX, offerY)

	// W1 still holds their paid order; nothing moved between buyers.
	mine := api.call(http.MethodGet, "/api/v1/orders/"+offerX, nil, buyerHeader(t, w1))
	require.Equal(t, http.StatusOK, mine.status, "%s", mine.body)
	require.Equal(t, "PAID", mine.json(t)["status"])
	require.Equal(t, http.StatusNotFound,
		api.call(http.MethodGet, "/api/v1/orders/"+offerX, nil, buyerHeader(t, w2)).status)
	s.checkClean(skuX, skuY)
}

// offerOf waits until GET .../waitlist/me names the order offered to user.
func (in *instance) offerOf(sku, user string) string {
	in.t.Helper()
	var id string
	require.EventuallyWithT(in.t, func(c *assert.CollectT) {
		r := in.call(http.MethodGet, "/api/v1/skus/"+sku+"/waitlist/me", nil, buyerHeader(in.t, user))
		if assert.Equal(c, http.StatusOK, r.status) {
			id, _ = r.json(in.t)["offer_order_id"].(string)
			assert.NotEmpty(c, id)
		}
	}, 15*time.Second, 50*time.Millisecond)
	return id
}

// pendingOrder waits until user reads order id as theirs, PENDING_PAYMENT
// for amount.
func (in *instance) pendingOrder(id, user string, amount int64) {
	in.t.Helper()
	require.EventuallyWithT(in.t, func(c *assert.CollectT) {
		r := in.call(http.MethodGet, "/api/v1/orders/"+id, nil, buyerHeader(in.t, user))
		if !assert.Equal(c, http.StatusOK, r.status, "%s", r.body) {
			return
		}
		o := r.json(in.t)
		assert.Equal(c, "PENDING_PAYMENT", o["status"])
		assert.Equal(c, user, o["user_id"])
		assert.EqualValues(c, amount, o["amount"])
	}, 15*time.Second, 50*time.Millisecond)
}

// checkClean runs starter check's audit on each SKU and requires no breach.
func (s *stack) checkClean(skus ...string) {
	s.t.Helper()
	for _, sku := range skus {
		rep, err := audit.Check(s.t.Context(), audit.Deps{Stock: s.b.Stock, Orders: s.b.Orders, Temporal: s.b.Temporal}, sku)
		require.NoError(s.t, err)
		require.True(s.t, rep.OK, "%s: %+v", sku, rep.Violations)
	}
}

// TestWaitlistSkipsBuyersAtTheLimit is issue 21's seventh defect: a buyer
// who already held the limit could stand first on the waitlist; their offer
// was rejected LIMIT_EXCEEDED and the unit went to open sale, passing over
// the buyers still waiting. Now such a buyer cannot join, and an offer whose
// buyer reached the limit after joining goes to the next one.
func TestWaitlistSkipsBuyersAtTheLimit(t *testing.T) {
	s := newStack(t, stackOptions{})
	api := s.api
	sku := s.name("wlim")
	api.putSKU(sku, 5, 100, 2, 2)
	holder, a, b, w1, w2 := s.name("holder"), s.name("a"), s.name("b"), s.name("w1"), s.name("w2")

	orderA := api.buy(s.name("oa"), a, sku, 2)
	require.Equal(t, http.StatusCreated, orderA.status, "%s", orderA.body)
	orderB := api.buy(s.name("ob"), b, sku, 1)
	require.Equal(t, http.StatusCreated, orderB.status, "%s", orderB.body)
	r := api.buy(s.name("oh"), holder, sku, 1)
	require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
	require.Equal(t, http.StatusCreated, api.buy(s.name("oh2"), holder, sku, 1).status, "the holder now holds the limit")

	// At the limit: no place in the line.
	r = api.joinWaitlist(sku, holder)
	require.Equal(t, http.StatusUnprocessableEntity, r.status, "%s", r.body)
	require.Equal(t, "LIMIT_EXCEEDED", r.code(t))
	require.Equal(t, http.StatusCreated, api.joinWaitlist(sku, w1).status)
	require.Equal(t, http.StatusCreated, api.joinWaitlist(sku, w2).status)

	// A's two units go back on open sale (a multi-unit release skips the
	// line), and W1, still waiting, buys both: W1 now holds the limit.
	require.Equal(t, http.StatusOK, api.cancel(a, orderA.json(t)["order_id"].(string)).status)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Equal(c, http.StatusCreated, api.buy(s.name("ow1"), w1, sku, 2).status)
	}, 10*time.Second, 100*time.Millisecond)

	// B's unit is offered to W1, who cannot take it: it goes to W2.
	require.Equal(t, http.StatusOK, api.cancel(b, orderB.json(t)["order_id"].(string)).status)
	offer := api.offerOf(sku, w2)
	api.pendingOrder(offer, w2, 100)
	inv := api.inventory(sku)
	require.Zero(t, inv.Available, "the unit never went back on open sale")
	s.checkClean(sku)
}
