//go:build integration

package httpapi_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flashsale/flashsale"
)

// TestClientOrderIDsAreTheBuyers: a buy request's client_order_id is the buyer's
// own key. A squatter who sends a buyer's predictable key first neither
// blocks the buyer nor learns anything (no ORDER_ID_CONFLICT across buyers,
// an unknown SKU answers the same whoever used the key); a retry with the
// same key reaches the same order, and a key is never an order id.
func TestClientOrderIDsAreTheBuyers(t *testing.T) {
	s := newStack(t, stackOptions{})
	api := s.api
	sku, ghost := s.name("sku"), s.name("no-such-sku")
	api.putSKU(sku, 10, 500, 2, 1)
	alice, mallory, carol := s.name("alice"), s.name("mallory"), s.name("carol")
	key := s.name("cart-1") // predictable, as retry keys are

	// The squatter first: with an unknown SKU, then for real.
	r := api.buy(key, mallory, ghost, 1)
	require.Equal(t, http.StatusNotFound, r.status, "%s", r.body)
	require.Equal(t, "UNKNOWN_SKU", r.code(t))
	r = api.buy(key, mallory, sku, 1)
	require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
	squatted := r.json(t)

	// The buyer whose key it is: the same answers as for a fresh key.
	r = api.buy(key, alice, ghost, 1)
	require.Equal(t, http.StatusNotFound, r.status, "%s", r.body)
	require.Equal(t, "UNKNOWN_SKU", r.code(t), "no sign that somebody used the key")
	r = api.buy(key, alice, sku, 1)
	require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
	mine := r.json(t)
	id := mine["order_id"].(string)
	require.Equal(t, "PENDING_PAYMENT", mine["status"])
	require.Equal(t, key, mine["client_order_id"])
	require.Equal(t, key, squatted["client_order_id"])
	require.NotEqual(t, squatted["order_id"], id, "two buyers' equal keys are two orders")
	require.Len(t, id, 42)
	require.True(t, strings.HasPrefix(id, "b-"), id)
	require.True(t, flashsale.ValidID(id, flashsale.MaxIDLength), id)
	require.NotContains(t, id, key)

	// Retries reach the same order, each buyer their own.
	again := api.buy(key, alice, sku, 1)
	require.Equal(t, http.StatusCreated, again.status, "%s", again.body)
	require.JSONEq(t, string(r.body), string(again.body))
	r = api.buy(key, mallory, sku, 1)
	require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
	require.Equal(t, squatted["order_id"], r.json(t)["order_id"])

	// The order is named by its id: read, paid; nobody else reads it, and
	// the bare key names no order.
	r = api.call(http.MethodGet, "/api/v1/orders/"+id, nil, buyerHeader(t, alice))
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	require.Equal(t, alice, r.json(t)["user_id"])
	require.Equal(t, http.StatusNotFound, api.call(http.MethodGet, "/api/v1/orders/"+id, nil, buyerHeader(t, mallory)).status)
	require.Equal(t, http.StatusNotFound, api.call(http.MethodGet, "/api/v1/orders/"+key, nil, buyerHeader(t, alice)).status)
	r = api.pay(callback{OrderID: id, TransactionID: s.name("tx-1"), Amount: 500, Status: "SUCCESS"})
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	require.Equal(t, "PAID", r.json(t)["status"])

	// A rejected order keeps its key from nobody else.
	r = api.buy(s.name("cart-2"), alice, sku, 1)
	require.Equal(t, "LIMIT_EXCEEDED", r.code(t), "one unit per buyer")
	r = api.buy(s.name("cart-2"), carol, sku, 1)
	require.Equal(t, http.StatusCreated, r.status, "%s", r.body)

	require.Zero(t, api.metrics().Edge.IDConflicts, "no ORDER_ID_CONFLICT across buyers")
	// What starter check runs: no invariant broken by anything above.
	s.checkClean(sku)
}
