//go:build integration

package httpapi_test

import (
	"encoding/json"
	"net/http"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/stretchr/testify/require"

	"github.com/flashsale/flashsale/internal/httpapi"
)

// docFields reads the property names of the document's schemas, the only
// names the client below may use: a name it asks for that the schema does
// not have fails the test, so the client is written from the document, not
// from this package's Go types.
type docFields struct {
	t   *testing.T
	doc *openapi3.T
}

// field is schema's property name, checked to be in the document.
func (d docFields) field(schema, name string) string {
	d.t.Helper()
	s := d.doc.Components.Schemas[schema]
	require.NotNil(d.t, s, "no schema %s", schema)
	require.Contains(d.t, s.Value.Properties, name, "schema %s has no property %s", schema, name)
	return name
}

// itemField is a property of the items of schema's array property list.
func (d docFields) itemField(schema, list, name string) string {
	d.t.Helper()
	p := d.doc.Components.Schemas[schema].Value.Properties[d.field(schema, list)]
	require.NotNil(d.t, p.Value.Items, "%s.%s is not an array", schema, list)
	require.Contains(d.t, p.Value.Items.Value.Properties, name, "%s.%s[] has no property %s", schema, list, name)
	return name
}

// TestClientFromTheDocumentsFieldNames is a client written only from the
// OpenAPI document's field names: it buys with its own key, reads the
// order by the answer's order_id, pays it as the payment provider does (a
// signed callback naming that order_id), reads it paid, buys another and
// cancels it. Every request and answer also passes the contract
// (enforceContract). A contract whose request and answer used one name
// for two things (the key as order_id) failed here: the later calls named
// the key, and found no order.
func TestClientFromTheDocumentsFieldNames(t *testing.T) {
	s := newStack(t, stackOptions{})
	api := s.api
	enforceContract(t, api)
	raw, err := os.ReadFile("openapi.yaml")
	require.NoError(t, err)
	doc := loadOpenAPI(t, raw)
	require.Equal(t, "1.0.0", doc.Info.Version, "the contract is v1")
	d := docFields{t: t, doc: doc}

	sku, buyer := s.name("doc"), s.name("buyer")
	const price = 1250
	api.putSKU(sku, 2, price, 2, 2)
	buyerH := buyerHeader(t, buyer)

	// The request's names, from OrderRequest.
	keyF, itemsF := d.field("OrderRequest", "client_order_id"), d.field("OrderRequest", "items")
	skuF, qtyF := d.itemField("OrderRequest", "items", "sku_id"), d.itemField("OrderRequest", "items", "quantity")
	buy := func(key string) map[string]any {
		t.Helper()
		body := mustJSON(t, map[string]any{keyF: key, itemsF: []map[string]any{{skuF: sku, qtyF: 1}}})
		r := api.call(http.MethodPost, "/api/v1/orders", body, buyerH)
		require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
		return r.json(t)
	}
	// The answer's names, from OrderCreated: order_id is the order,
	// client_order_id our key echoed.
	idF, echoF := d.field("OrderCreated", "order_id"), d.field("OrderCreated", "client_order_id")
	statusF, amountF, payByF := d.field("OrderCreated", "status"), d.field("OrderCreated", "amount"), d.field("OrderCreated", "pay_by")

	created := buy("cart-1")
	orderID, _ := created[idF].(string)
	require.NotEmpty(t, orderID)
	require.NotEqual(t, "cart-1", orderID, "the order's id is not the buyer's key")
	require.Equal(t, "cart-1", created[echoF])
	require.Equal(t, "PENDING_PAYMENT", created[statusF])
	require.EqualValues(t, price, created[amountF])
	payBy, err := time.Parse(time.RFC3339, created[payByF].(string))
	require.NoError(t, err)
	require.True(t, payBy.After(time.Now()))
	require.Equal(t, orderID, buy("cart-1")[idF], "the same key again is the same order")

	// Read the order by the answer's order_id (the path's {id}).
	read := func() map[string]any {
		t.Helper()
		r := api.call(http.MethodGet, "/api/v1/orders/"+orderID, nil, buyerH)
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		return r.json(t)
	}
	o := read()
	require.Equal(t, orderID, o[d.field("Order", "order_id")])
	require.Equal(t, buyer, o[d.field("Order", "user_id")])
	require.Equal(t, "PENDING_PAYMENT", o[d.field("Order", "status")])
	require.EqualValues(t, price, o[d.field("Order", "amount")])
	items, _ := o[d.field("Order", "items")].([]any)
	require.Len(t, items, 1)
	require.Equal(t, sku, items[0].(map[string]any)[d.field("Item", "sku_id")])

	// Pay as the provider does: the PaymentCallback's names, signed.
	cb := mustJSON(t, map[string]any{
		d.field("PaymentCallback", "order_id"):       orderID,
		d.field("PaymentCallback", "transaction_id"): s.name("tx-1"),
		d.field("PaymentCallback", "amount"):         created[amountF],
		d.field("PaymentCallback", "payment_status"): "SUCCESS",
	})
	r := api.signed(cb, httpapi.Sign(testSecret, time.Now(), cb))
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	paid := r.json(t)
	require.Equal(t, orderID, paid[d.field("OrderStatusAnswer", "order_id")])
	require.Equal(t, "PAID", paid[d.field("OrderStatusAnswer", "status")])
	require.NotContains(t, paid, d.field("OrderStatusAnswer", "refund"))
	o = read()
	require.Equal(t, "PAID", o["status"])
	payments, _ := o[d.field("Order", "payments")].([]any)
	require.Len(t, payments, 1)
	require.Equal(t, s.name("tx-1"), payments[0].(map[string]any)[d.field("Payment", "transaction_id")])

	// Another order, cancelled by the id its answer gave.
	other := buy("cart-2")[idF].(string)
	require.NotEqual(t, orderID, other)
	r = api.call(http.MethodPost, "/api/v1/orders/"+other+"/cancel", nil, buyerH)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	require.Equal(t, map[string]any{"order_id": other, "status": "CANCELLED"}, r.json(t))
	r = api.call(http.MethodGet, "/api/v1/orders/"+other, nil, buyerH)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	require.Equal(t, "CANCELLED", r.json(t)["status"])

	// A client written from the earlier contract's names is told which to
	// use, and nothing is bought.
	old := mustJSON(t, map[string]any{"order_id": "cart-3", itemsF: []map[string]any{{skuF: sku, qtyF: 1}}})
	r = api.call(http.MethodPost, "/api/v1/orders", old, buyerH)
	require.Equal(t, http.StatusBadRequest, r.status, "%s", r.body)
	require.Equal(t, "INVALID_REQUEST", r.code(t))
	var e map[string]string
	require.NoError(t, json.Unmarshal(r.body, &e))
	require.Contains(t, e["message"], "client_order_id")
	require.False(t, slices.Contains(keysOf(doc.Components.Schemas["OrderRequest"].Value.Properties), "order_id"),
		"the document's buy request has no order_id")
	inv := api.inventory(sku)
	require.Equal(t, [3]int64{1, 0, 1}, [3]int64{inv.Sold, inv.Frozen, inv.DBAvailable}, "one paid, one cancelled, none for the refused body")
}

func keysOf[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
