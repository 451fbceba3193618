//go:build integration

package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/flashsale/flashsale/internal/httpapi"
	"github.com/flashsale/flashsale/internal/inventory"
)

// contract is an http.RoundTripper that validates every request a test
// sends and every answer it gets against the OpenAPI document: an answer
// with a status, field, code or header the document does not allow fails
// the test, and so does a 2xx to a request the document refuses (the
// document would be stricter than the server). A request the document
// refuses must be answered 4xx. Methods and paths the document lacks must
// be the mux's 405 (with the documented methods in Allow) and 404.
type contract struct {
	t      *testing.T
	doc    *openapi3.T
	router routers.Router
	base   http.RoundTripper

	mu sync.Mutex
	// seen counts answers by "METHOD /path status".
	seen map[string]int
}

// enforceContract loads the document in from the server itself and makes
// every later request of in's client pass through the contract.
func enforceContract(t *testing.T, in *instance) *contract {
	t.Helper()
	resp, err := in.client.Get(in.url + "/api/openapi.yaml")
	require.NoError(t, err)
	served, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	onDisk, err := os.ReadFile("openapi.yaml")
	require.NoError(t, err)
	require.Equal(t, string(onDisk), string(served), "the server embeds openapi.yaml")

	doc := loadOpenAPI(t, served)
	// The test server's address, not the document's example.
	doc.Servers = openapi3.Servers{{URL: in.url}}
	router, err := gorillamux.NewRouter(doc)
	require.NoError(t, err)
	c := &contract{t: t, doc: doc, router: router, base: in.client.Transport, seen: map[string]int{}}
	in.client.Transport = c
	return c
}

func (c *contract) RoundTrip(req *http.Request) (*http.Response, error) {
	var reqBody []byte
	if req.Body != nil {
		var err error
		if reqBody, err = io.ReadAll(req.Body); err != nil {
			return nil, err
		}
		req.Body.Close()
		req.Body = io.NopCloser(bytes.NewReader(reqBody))
	}
	resp, err := c.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	if err := c.check(req, reqBody, resp, body); err != nil {
		c.t.Errorf("%s %s answered %d %s: %v", req.Method, req.URL.Path, resp.StatusCode, truncate(body), err)
	}
	return resp, nil
}

func truncate(b []byte) string {
	if len(b) > 300 {
		return string(b[:300]) + "..."
	}
	return string(b)
}

func (c *contract) check(req *http.Request, reqBody []byte, resp *http.Response, body []byte) error {
	ctx := context.Background()
	r := req.Clone(ctx)
	r.Body = io.NopCloser(bytes.NewReader(reqBody))
	route, params, err := c.router.FindRoute(r)
	switch {
	case errors.Is(err, routers.ErrMethodNotAllowed):
		c.count(req.Method+" "+req.URL.Path, resp.StatusCode)
		if allow := c.allowed(r); resp.Header.Get("Allow") != allow {
			return fmt.Errorf("allow %q, the document has %q", resp.Header.Get("Allow"), allow)
		}
		return c.checkComponent("MethodNotAllowed", resp, body)
	case errors.Is(err, routers.ErrPathNotFound):
		c.count("unknown path", resp.StatusCode)
		return c.checkComponent("NotFound", resp, body)
	case err != nil:
		return fmt.Errorf("find route: %w", err)
	}
	c.count(route.Method+" "+route.Path, resp.StatusCode)

	in := &openapi3filter.RequestValidationInput{
		Request: r, PathParams: params, Route: route,
		Options: &openapi3filter.Options{AuthenticationFunc: bearer, MultiError: true},
	}
	reqErr := openapi3filter.ValidateRequest(ctx, in)
	out := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: in, Status: resp.StatusCode, Header: resp.Header,
		// An undocumented status fails as an undocumented field does.
		Options: &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
	}
	out.SetBodyBytes(body)
	if err := openapi3filter.ValidateResponse(ctx, out); err != nil {
		return fmt.Errorf("answer: %w", err)
	}
	switch {
	case reqErr != nil && resp.StatusCode < 300:
		return fmt.Errorf("the server accepted a request the document refuses: %w", reqErr)
	case reqErr != nil && resp.StatusCode >= 500:
		return fmt.Errorf("a request the document refuses must be answered 4xx: %w", reqErr)
	}
	return nil
}

// bearer is the security schemes' check: a bearer token, and for a buyer's
// one a JWT's three parts. Whether the token is good is the server's to say.
func bearer(_ context.Context, in *openapi3filter.AuthenticationInput) error {
	tok, ok := strings.CutPrefix(in.RequestValidationInput.Request.Header.Get("Authorization"), "Bearer ")
	switch {
	case !ok || tok == "":
		return errors.New("no bearer token")
	case in.SecuritySchemeName == "buyerJWT" && strings.Count(tok, ".") != 2:
		return errors.New("not a JWT")
	}
	return nil
}

// allowed is the Allow header the document implies for r's path.
func (c *contract) allowed(r *http.Request) string {
	var methods []string
	for _, m := range []string{http.MethodDelete, http.MethodGet, http.MethodPatch, http.MethodPost, http.MethodPut} {
		alt := r.Clone(r.Context())
		alt.Method = m
		if _, _, err := c.router.FindRoute(alt); err == nil {
			methods = append(methods, m)
		}
	}
	return strings.Join(methods, ", ")
}

// checkComponent validates an answer no operation describes (an unknown
// path or method) against the component response for it.
func (c *contract) checkComponent(name string, resp *http.Response, body []byte) error {
	ref := c.doc.Components.Responses[name]
	if ref == nil {
		return fmt.Errorf("no components/responses/%s", name)
	}
	if want := int(ref.Value.Extensions["x-status"].(float64)); resp.StatusCode != want {
		return fmt.Errorf("status %d, components/responses/%s is %d", resp.StatusCode, name, want)
	}
	for h, hr := range ref.Value.Headers {
		if hr.Value.Required && resp.Header.Get(h) == "" {
			return fmt.Errorf("no %s header", h)
		}
	}
	mt := ref.Value.Content.Get(resp.Header.Get("Content-Type"))
	if mt == nil {
		return fmt.Errorf("content type %q", resp.Header.Get("Content-Type"))
	}
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return err
	}
	return mt.Schema.Value.VisitJSON(v, openapi3.EnableJSONSchema2020(), openapi3.VisitAsResponse())
}

func (c *contract) count(op string, status int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seen[fmt.Sprintf("%s %d", op, status)]++
}

// requireEveryOperation fails the test unless every operation of the
// document was called and answered with at least one documented status.
func (c *contract) requireEveryOperation() {
	c.t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	var missing []string
	for path, item := range c.doc.Paths.Map() {
		for method := range item.Operations() {
			found := false
			for k := range c.seen {
				found = found || strings.HasPrefix(k, method+" "+path+" ")
			}
			if !found {
				missing = append(missing, method+" "+path)
			}
		}
	}
	slices.Sort(missing)
	require.Empty(c.t, missing, "operations the test never called")
	seen := make([]string, 0, len(c.seen))
	for k := range c.seen {
		seen = append(seen, k)
	}
	slices.Sort(seen)
	c.t.Logf("answers checked against the document (%d kinds):\n%s", len(seen), strings.Join(seen, "\n"))
}

// raw is a request whose answer is not JSON (instance.call insists on it).
func (in *instance) raw(method, path string) response {
	in.t.Helper()
	req, err := http.NewRequest(method, in.url+path, nil)
	require.NoError(in.t, err)
	resp, err := in.client.Do(req)
	require.NoError(in.t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(in.t, err)
	return response{status: resp.StatusCode, header: resp.Header, body: b}
}

// TestOpenAPIContract drives every route of the real stack, its answers
// and its refusals, through the contract: each request and answer is
// validated against the document the server serves.
func TestOpenAPIContract(t *testing.T) {
	s := newStack(t, stackOptions{})
	api := s.api
	c := enforceContract(t, api)
	admin := adminHeader()
	sku, other, unknown := s.name("c"), s.name("c2"), s.name("none")
	want := func(status int, r response, code string) {
		t.Helper()
		require.Equal(t, status, r.status, "%s", r.body)
		if code != "" {
			require.Equal(t, code, r.code(t))
		}
	}
	signedCallback := func(cb callback) response { return api.pay(cb) }

	// Operators define, preheat, restock and resize.
	api.putSKU(sku, 3, 500, 2, 2)
	api.putSKU(other, 5, 100, 1, 1)
	skuPath := "/api/v1/admin/skus/" + sku
	want(401, api.call(http.MethodPut, skuPath, mustJSON(t, map[string]any{"total": 1, "price": 1}), nil), "UNAUTHORIZED")
	want(400, api.call(http.MethodPut, skuPath, []byte(`{"total":1}`), admin), "INVALID_REQUEST")
	want(413, api.call(http.MethodPut, skuPath, bytes.Repeat([]byte(" "), 70<<10), admin), "PAYLOAD_TOO_LARGE")
	want(200, api.call(http.MethodPost, skuPath+"/preheat", nil, admin), "")
	want(404, api.call(http.MethodPost, "/api/v1/admin/skus/"+unknown+"/preheat", nil, admin), "UNKNOWN_SKU")
	restock := mustJSON(t, map[string]any{"quantity": 1, "restock_id": s.name("r1")})
	want(200, api.call(http.MethodPost, skuPath+"/restock", restock, admin), "")
	r := api.call(http.MethodPost, skuPath+"/restock", restock, admin)
	want(200, r, "")
	require.Equal(t, false, r.json(t)["added"])
	want(200, api.call(http.MethodPost, skuPath+"/buckets", []byte(`{"buckets":4}`), admin), "")
	want(400, api.call(http.MethodPost, skuPath+"/buckets", []byte(`{"buckets":0}`), admin), "INVALID_REQUEST")

	// Public stock: cached for everyone, fresh for operators.
	r = api.call(http.MethodGet, "/api/v1/inventory/"+sku, nil, nil)
	want(200, r, "")
	require.Equal(t, "public, max-age=1", r.header.Get("Cache-Control"))
	require.Equal(t, int64(4), api.inventory(sku).Total)
	// A SKU sold at payment shows its bookings left beside its units.
	booked := s.name("booked")
	api.putTerms(booked, 2, map[string]any{"deduct": "payment", "overbook": 2})
	want(200, api.call(http.MethodGet, "/api/v1/inventory/"+booked, nil, nil), "")
	require.Equal(t, new(int64(4)), api.inventory(booked).BookingsLeft)
	want(404, api.call(http.MethodGet, "/api/v1/inventory/"+unknown, nil, nil), "UNKNOWN_SKU")
	want(400, api.call(http.MethodGet, "/api/v1/inventory/bad!sku", nil, nil), "INVALID_REQUEST")

	// Buyers: four units, four buyers; the refusals on the way.
	alice, bob, carol, dave, erin := s.name("alice"), s.name("bob"), s.name("carol"), s.name("dave"), s.name("erin")
	a1 := api.mustBuy("k1", alice, sku, 1)
	r = api.buy("k1", alice, sku, 1)
	want(201, r, "")
	require.Equal(t, a1, r.json(t)["order_id"])
	want(401, api.call(http.MethodPost, "/api/v1/orders", buyBody(t, "", "", sku, 1), nil), "UNAUTHENTICATED")
	want(403, api.call(http.MethodPost, "/api/v1/orders", buyBody(t, "", bob, sku, 1), buyerHeader(t, carol)), "USER_MISMATCH")
	want(404, api.buy("", s.name("u404"), unknown, 1), "UNKNOWN_SKU")
	want(400, api.buy("", s.name("u400"), sku, 0), "INVALID_REQUEST")
	want(413, api.call(http.MethodPost, "/api/v1/orders", bytes.Repeat([]byte(" "), 70<<10), buyerHeader(t, s.name("u413"))), "PAYLOAD_TOO_LARGE")
	want(422, api.buy("k2", alice, sku, 2), "LIMIT_EXCEEDED")
	b1 := api.mustBuy("", bob, sku, 1)
	c1 := api.mustBuy("", carol, sku, 1)
	d1 := api.mustBuy("", dave, sku, 1)
	want(409, api.buyRetrying("", erin, sku, 1), "SOLD_OUT")

	// Reads: the owner and operators; anyone else hears "not found".
	want(200, api.call(http.MethodGet, "/api/v1/orders/"+a1, nil, buyerHeader(t, alice)), "")
	api.order(a1)
	want(404, api.call(http.MethodGet, "/api/v1/orders/"+a1, nil, buyerHeader(t, bob)), "ORDER_NOT_FOUND")
	want(401, api.call(http.MethodGet, "/api/v1/orders/"+a1, nil, nil), "UNAUTHENTICATED")
	want(400, api.call(http.MethodGet, "/api/v1/orders/bad!id", nil, buyerHeader(t, alice)), "INVALID_REQUEST")

	// The payment provider.
	want(200, signedCallback(callback{OrderID: a1, TransactionID: a1 + "-t", Amount: 500, Status: "SUCCESS"}), "")
	want(200, signedCallback(callback{OrderID: a1, TransactionID: a1 + "-t", Amount: 500, Status: "SUCCESS"}), "")
	want(401, api.signed(mustJSON(t, callback{OrderID: b1, TransactionID: "t", Amount: 500, Status: "SUCCESS"}), "t=1,v1=00"), "BAD_SIGNATURE")
	want(401, api.signed(mustJSON(t, callback{OrderID: b1, TransactionID: "t", Amount: 500, Status: "SUCCESS"}), ""), "BAD_SIGNATURE")
	want(400, signedCallback(callback{OrderID: b1, TransactionID: b1 + "-t", Amount: 0, Status: "SUCCESS"}), "INVALID_REQUEST")
	want(422, signedCallback(callback{OrderID: b1, TransactionID: b1 + "-t", Amount: 499, Status: "SUCCESS"}), "AMOUNT_MISMATCH")
	want(409, signedCallback(callback{OrderID: c1, TransactionID: a1 + "-t", Amount: 500, Status: "SUCCESS"}), "TRANSACTION_CONFLICT")
	want(200, signedCallback(callback{OrderID: c1, TransactionID: c1 + "-f", Amount: 500, Status: "FAILED"}), "")
	hold := func(body string) response {
		return api.call(http.MethodPost, "/api/v1/payments/hold", []byte(body),
			http.Header{httpapi.SignatureHeader: {httpapi.Sign(testSecret, time.Now(), []byte(body))}})
	}
	want(200, hold(`{"order_id":"`+d1+`","extend_by":"1m"}`), "")
	want(409, hold(`{"order_id":"`+d1+`","extend_by":"1m"}`), "HOLD_ALREADY_EXTENDED")
	want(409, hold(`{"order_id":"`+a1+`","extend_by":"1m"}`), "ORDER_CLOSED")
	want(400, hold(`{"order_id":"`+c1+`","extend_by":"1h"}`), "INVALID_REQUEST")
	want(401, api.call(http.MethodPost, "/api/v1/payments/hold", []byte(`{"order_id":"`+c1+`","extend_by":"1m"}`), nil), "BAD_SIGNATURE")
	// Unpaid orders hold units: no overwrite of Redis.
	want(409, api.call(http.MethodPost, skuPath+"/preheat", nil, admin), "SKU_IN_USE")

	// The waitlist of the sold-out SKU.
	wl := "/api/v1/skus/" + sku + "/waitlist"
	want(201, api.call(http.MethodPost, wl, nil, buyerHeader(t, erin)), "")
	want(200, api.call(http.MethodPost, wl, []byte(`{"user_id":"`+erin+`"}`), buyerHeader(t, erin)), "")
	want(401, api.call(http.MethodPost, wl, nil, nil), "UNAUTHENTICATED")
	want(403, api.call(http.MethodPost, wl, []byte(`{"user_id":"`+bob+`"}`), buyerHeader(t, erin)), "USER_MISMATCH")
	want(409, api.call(http.MethodPost, "/api/v1/skus/"+other+"/waitlist", nil, buyerHeader(t, erin)), "NOT_SOLD_OUT")
	want(200, api.call(http.MethodGet, wl+"/me", nil, buyerHeader(t, erin)), "")
	want(404, api.call(http.MethodGet, wl+"/me", nil, buyerHeader(t, bob)), "NOT_ON_WAITLIST")

	// Dave cancels: his unit becomes Erin's offer; his late money is
	// recorded for refund.
	want(200, api.cancel(dave, d1), "")
	want(409, api.cancel(dave, d1), "ORDER_CLOSED")
	var offer string
	require.Eventually(t, func() bool {
		r := api.call(http.MethodGet, wl+"/me", nil, buyerHeader(t, erin))
		offer, _ = r.json(t)["offer_order_id"].(string)
		return r.status == 200 && offer != ""
	}, 30*time.Second, 100*time.Millisecond)
	require.Eventually(t, func() bool {
		r := api.call(http.MethodGet, "/api/v1/orders/"+offer, nil, buyerHeader(t, erin))
		return r.status == 200 && r.json(t)["status"] == "PENDING_PAYMENT"
	}, 30*time.Second, 100*time.Millisecond)
	r = signedCallback(callback{OrderID: d1, TransactionID: d1 + "-late", Amount: 500, Status: "SUCCESS"})
	want(200, r, "")
	require.Equal(t, "REQUIRED", r.json(t)["refund"])
	require.Eventually(t, func() bool { return api.order(d1)["refund"] == "REQUIRED" }, 30*time.Second, 100*time.Millisecond)

	// No worker to answer: the payment is handed to the order (202).
	s.sys.StopWorker()
	want(202, signedCallback(callback{OrderID: c1, TransactionID: c1 + "-t", Amount: 500, Status: "SUCCESS"}), "")
	s.sys.StartWorker()
	require.Eventually(t, func() bool { return api.order(c1)["status"] == "PAID" }, 30*time.Second, 100*time.Millisecond)

	// Reads are rate limited per buyer, with Retry-After. The 40 reads go
	// at once, so they outrun the 10 a second however slow each one is on
	// a busy machine; the answers are checked after.
	reads := make([]response, 40)
	var wg sync.WaitGroup
	for i := range reads {
		wg.Go(func() { reads[i] = api.call(http.MethodGet, "/api/v1/orders/"+b1, nil, buyerHeader(t, bob)) })
	}
	wg.Wait()
	limited := false
	for _, r := range reads {
		if r.status == http.StatusTooManyRequests {
			require.Equal(t, "RATE_LIMITED", r.code(t))
			if !limited {
				want(429, r, "RATE_LIMITED")
			}
			limited = true
			continue
		}
		want(200, r, "")
	}
	require.True(t, limited, "no 429 among 40 reads at once")

	// Public pages, health and the document itself.
	want(200, api.call(http.MethodGet, "/api/v1/skus/"+sku+"/live", nil, nil), "")
	want(404, api.call(http.MethodGet, "/api/v1/skus/"+unknown+"/live", nil, nil), "UNKNOWN_SKU")
	require.Equal(t, 200, api.raw(http.MethodGet, "/sale/"+sku).status)
	require.Equal(t, 404, api.raw(http.MethodGet, "/sale/"+unknown).status)
	require.Equal(t, 200, api.raw(http.MethodGet, "/static/sale/sale.js").status)
	require.Equal(t, 200, api.raw(http.MethodGet, "/static/sale/sale.css").status)
	require.Equal(t, 404, api.raw(http.MethodGet, "/static/sale/secret.txt").status)
	require.Equal(t, 200, api.raw(http.MethodGet, "/api/openapi.yaml").status)
	want(200, api.call(http.MethodGet, "/healthz", nil, nil), "")
	want(200, api.call(http.MethodGet, "/readyz", nil, nil), "")
	api.metrics()

	// A fair sale: started, entered, opened, bought with a pass, paused,
	// closed; and the refusals on the way.
	fair := s.name("c3")
	api.putSKU(fair, 2, 100, 1, 2)
	salePath := "/api/v1/admin/skus/" + fair + "/sale"
	startBody := mustJSON(t, map[string]any{"opens_at": time.Now().Add(time.Hour)})
	want(200, api.call(http.MethodPost, salePath, startBody, admin), "")
	want(409, api.call(http.MethodPost, salePath, startBody, admin), "SALE_STATE_CONFLICT")
	want(404, api.call(http.MethodPost, "/api/v1/admin/skus/"+unknown+"/sale", startBody, admin), "UNKNOWN_SKU")
	want(400, api.call(http.MethodPost, salePath, []byte(`{}`), admin), "INVALID_REQUEST")
	want(401, api.call(http.MethodPost, salePath, startBody, nil), "UNAUTHORIZED")
	want(200, api.call(http.MethodGet, salePath, nil, admin), "")
	want(404, api.call(http.MethodGet, "/api/v1/admin/skus/"+other+"/sale", nil, admin), "NO_SALE")
	queue := "/api/v1/skus/" + fair + "/queue"
	want(201, api.call(http.MethodPost, queue, nil, buyerHeader(t, alice)), "")
	want(200, api.call(http.MethodPost, queue, nil, buyerHeader(t, alice)), "")
	want(401, api.call(http.MethodPost, queue, nil, nil), "UNAUTHENTICATED")
	want(404, api.call(http.MethodPost, "/api/v1/skus/"+other+"/queue", nil, buyerHeader(t, alice)), "NO_SALE")
	want(404, api.call(http.MethodGet, queue+"/me", nil, buyerHeader(t, bob)), "NOT_IN_QUEUE")
	want(409, api.buyWithPass("", alice, fair, ""), "SALE_NOT_OPEN")
	want(409, api.call(http.MethodPost, salePath+"/resume", nil, admin), "SALE_STATE_CONFLICT")
	want(400, api.call(http.MethodPost, salePath+"/bogus", nil, admin), "INVALID_REQUEST")
	want(404, api.call(http.MethodPost, "/api/v1/admin/skus/"+other+"/sale/open", nil, admin), "NO_SALE")
	want(200, api.call(http.MethodPost, salePath+"/open", []byte(`{"reason":"contract"}`), admin), "")
	pass := api.waitPass(fair, alice)
	want(401, api.buyWithPass("", alice, fair, ""), "PASS_REQUIRED")
	want(403, api.buyWithPass("", bob, fair, pass), "PASS_FOREIGN")
	want(201, api.buyWithPass("", alice, fair, pass), "")
	want(403, api.buyWithPass("", alice, fair, pass), "PASS_USED")
	want(200, api.call(http.MethodPost, salePath+"/pause", nil, admin), "")
	want(409, api.buyWithPass("", alice, fair, pass), "SALE_PAUSED")
	want(200, api.call(http.MethodPost, salePath+"/close", nil, admin), "")
	want(409, api.call(http.MethodPost, queue, nil, buyerHeader(t, bob)), "SALE_CLOSED")

	// A SKU sold without a queue, closed: its selling ends.
	plain := s.name("c4")
	api.putSKU(plain, 1, 100, 1, 1)
	closeSKU := "/api/v1/admin/skus/" + plain + "/close"
	want(401, api.call(http.MethodPost, closeSKU, nil, nil), "UNAUTHORIZED")
	want(404, api.call(http.MethodPost, "/api/v1/admin/skus/"+unknown+"/close", nil, admin), "UNKNOWN_SKU")
	want(200, api.call(http.MethodPost, closeSKU, nil, admin), "")

	// A campaign of one SKU: started, read, controlled, voided.
	item := s.name("c5")
	api.putSKU(item, 4, 100, 1, 1)
	campaign := "/api/v1/admin/campaigns/" + s.id[:8]
	opens := time.Now().Add(time.Hour).UTC()
	campaignBody := mustJSON(t, map[string]any{"opens_at": opens, "closes_at": opens.Add(time.Hour),
		"items": []map[string]any{{"sku_id": item, "flash_price": 50, "allocation": 2}}})
	want(401, api.call(http.MethodPost, campaign, campaignBody, nil), "UNAUTHORIZED")
	want(400, api.call(http.MethodPost, campaign, []byte(`{}`), admin), "INVALID_REQUEST")
	want(200, api.call(http.MethodPost, campaign, campaignBody, admin), "")
	want(200, api.call(http.MethodGet, campaign, nil, admin), "")
	want(404, api.call(http.MethodGet, "/api/v1/admin/campaigns/nope"+s.id[:8], nil, admin), "NO_SALE")
	want(400, api.call(http.MethodPost, campaign+"/bogus", nil, admin), "INVALID_REQUEST")
	want(200, api.call(http.MethodPost, campaign+"/void", []byte(`{"reason":"contract"}`), admin), "")

	// One paid order refunded, its money then marked sent back.
	refund := "/api/v1/admin/orders/" + a1 + "/refund"
	want(409, api.call(http.MethodPost, "/api/v1/admin/payments/"+a1+"-t/refunded", nil, admin), "ORDER_CLOSED")
	want(200, api.call(http.MethodPost, refund, []byte(`{"restock":false,"reason":"contract"}`), admin), "")
	want(200, api.call(http.MethodPost, refund, []byte(`{"restock":true}`), admin), "")
	want(400, api.call(http.MethodPost, refund, []byte(`{}`), admin), "INVALID_REQUEST")
	want(401, api.call(http.MethodPost, refund, []byte(`{"restock":true}`), nil), "UNAUTHORIZED")
	want(404, api.call(http.MethodPost, "/api/v1/admin/orders/"+s.name("nope")+"/refund", []byte(`{"restock":true}`), admin), "ORDER_NOT_FOUND")
	want(200, api.call(http.MethodPost, "/api/v1/admin/payments/"+a1+"-t/refunded", []byte(`{"refund_id":"re-1"}`), admin), "")
	want(404, api.call(http.MethodPost, "/api/v1/admin/payments/nope-"+s.id+"/refunded", nil, admin), "ORDER_NOT_FOUND")

	// What the document does not list: the mux's 405 and 404.
	want(405, api.call(http.MethodDelete, "/api/v1/orders", nil, nil), "METHOD_NOT_ALLOWED")
	want(405, api.call(http.MethodGet, "/api/v1/payments/callback", nil, nil), "METHOD_NOT_ALLOWED")
	want(404, api.call(http.MethodGet, "/api/v1/nothing-here", nil, nil), "NOT_FOUND")

	c.requireEveryOperation()

	// Redis unreachable: ready but degraded; a buy decided on MySQL alone.
	d := deps(t, s.b)
	deadRedis := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: 100 * time.Millisecond})
	t.Cleanup(func() { _ = deadRedis.Close() })
	d.Redis, d.Stock = deadRedis, inventory.New(deadRedis, inventory.Options{})
	degraded, err := httpapi.New(d, s.apiConfig())
	require.NoError(t, err)
	broken := startInstance(t, degraded, false)
	enforceContract(t, broken)
	r = broken.call(http.MethodGet, "/readyz", nil, nil)
	want(200, r, "")
	require.Equal(t, "degraded", r.json(t)["status"])
	want(404, broken.buy("", s.name("u-degraded"), unknown, 1), "UNKNOWN_SKU")
	// Shutting down: 503 UNAVAILABLE with Retry-After.
	degraded.Drain()
	want(503, broken.call(http.MethodGet, "/readyz", nil, nil), "UNAVAILABLE")
}
