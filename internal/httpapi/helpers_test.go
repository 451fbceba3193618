//go:build integration

package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/internal/app"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/workflowservice/v1"

	"github.com/flashsale/flashsale/internal/app/apptest"
	"github.com/flashsale/flashsale/internal/backend"
	"github.com/flashsale/flashsale/internal/config"
	"github.com/flashsale/flashsale/internal/httpapi"
	"github.com/flashsale/flashsale/internal/identity"
	"github.com/flashsale/flashsale/internal/orderdb"
	"github.com/flashsale/flashsale/internal/testenv"
	"github.com/flashsale/flashsale/workflows"
)

// Test secrets: long enough for the API's minimum, never used elsewhere.
const (
	testSecret    = "whsec-test-0123456789abcdef"
	testOldSecret = "whsec-old-0123456789abcdef"
	testAdmin     = "admin-test-0123456789abcdef"
	testBuyerKey  = "buyer-test-0123456789abcdef-0123456789"
)

// buyers mints buyer tokens for testBuyerKey, as the shop's login service
// would.
var buyers = &identity.Minter{Secret: []byte(testBuyerKey)}

// buyerHeader is the Authorization header of user's token.
func buyerHeader(t *testing.T, user string) http.Header {
	t.Helper()
	tok, err := buyers.Token(user, time.Hour)
	require.NoError(t, err)
	return http.Header{"Authorization": {"Bearer " + tok}}
}

type stackOptions struct {
	paymentTimeout time.Duration
	maxInFlight    int64
	salePasses     int64
	buyRate        int
	localTTL       time.Duration
	admissionMax   int
}

// stack is one isolated deployment on the shared services: its own MySQL
// database and task queue, an in-process worker, and API instances serving
// over httptest. Ids it makes start with id, so Redis keys never collide
// with another test's and cleanup can find them.
type stack struct {
	t    *testing.T
	id   string
	cfg  config.Config
	opts stackOptions
	// sys is the running system; b its connections. sys.StopWorker and
	// sys.StartWorker take its worker away and bring a new one, as a
	// worker restart would.
	sys *apptest.System
	b   *backend.Backend
	// api is the first instance; more come from newInstance.
	api *instance
}

type instance struct {
	t      *testing.T
	server *httpapi.Server
	url    string
	client *http.Client
}

func testLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

func newStack(t *testing.T, opts stackOptions) *stack {
	t.Helper()
	s := &stack{t: t, opts: opts, sys: apptest.Start(t, apptest.Options{
		Name: "api-test", PaymentTimeout: opts.paymentTimeout, WorkerConcurrency: 256, Logger: testLogger(),
	})}
	s.id, s.cfg, s.b = s.sys.ID, s.sys.Config, s.sys.Backend
	id := s.id
	rdb := testenv.Redis(t)
	t.Cleanup(func() {
		ctx := context.Background()
		for _, pattern := range []string{"fs:{sku:" + id + "*", "fs:placed:" + id + "*", "rate:fs:buy:" + id + "*", "rate:fs:waitlist:" + id + "*", "rate:fs:orders:" + id + "*"} {
			iter := rdb.Scan(ctx, 0, pattern, 1000).Iterator()
			for iter.Next(ctx) {
				_ = rdb.Unlink(ctx, iter.Val()).Err()
			}
		}
	})
	s.api = s.newInstance(s.b)
	return s
}

// connect opens other backend connections with the stack's config, as
// another process would.
func (s *stack) connect() *backend.Backend { return s.sys.Connect(s.cfg, testLogger()) }

func (s *stack) apiConfig() httpapi.Config {
	return httpapi.Config{
		WebhookSecrets:       []string{testSecret, testOldSecret},
		AdminToken:           testAdmin,
		BuyRate:              s.opts.buyRate,
		MaxInFlight:          s.opts.maxInFlight,
		SalePasses:           s.opts.salePasses,
		LocalSoldOutTTL:      s.opts.localTTL,
		AdmissionMaxInFlight: s.opts.admissionMax,
		Identity:             identity.Config{Secret: []byte(testBuyerKey)},
	}
}

// newInstance starts an API server on b, built as the API process builds
// it (app.NewHTTPAPI), as another process would.
func (s *stack) newInstance(b *backend.Backend) *instance {
	s.t.Helper()
	api, err := app.NewHTTPAPI(s.t.Context(), b, s.apiConfig())
	require.NoError(s.t, err)
	return startInstance(s.t, api, true)
}

// deps are b's connections with the test buyers' token verifier.
func deps(t *testing.T, b *backend.Backend) httpapi.Deps {
	t.Helper()
	d := httpapi.FromBackend(b)
	v, err := identity.NewVerifier(t.Context(), identity.Config{Secret: []byte(testBuyerKey)})
	require.NoError(t, err)
	d.Buyers = v
	return d
}

// startInstance serves api on a test listener (apptest.Serve).
func startInstance(t *testing.T, api *httpapi.Server, waitSubscribed bool) *instance {
	t.Helper()
	return instanceOf(t, apptest.Serve(t, api, waitSubscribed))
}

// instanceOf gives a served API a client that reuses connections.
func instanceOf(t *testing.T, api *apptest.API) *instance {
	return &instance{t: t, server: api.Server, url: api.URL, client: &http.Client{
		Timeout: time.Minute,
		// Floods reuse connections instead of exhausting ephemeral ports.
		Transport: &http.Transport{MaxIdleConns: 1000, MaxIdleConnsPerHost: 1000},
	}}
}

// secondInstance is another API process: its own connections to the same
// Redis, MySQL and Temporal, no worker.
func (s *stack) secondInstance() *instance {
	return s.newInstance(s.connect())
}

// name makes an id unique to the stack.
func (s *stack) name(n string) string { return s.id + "-" + n }

// orderID is the id of the order user placed with their key (a buy
// request's client_order_id).
func orderID(user, key string) string { return flashsale.BuyerOrderID(user, key) }

type response struct {
	status int
	header http.Header
	body   []byte
}

func (r response) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(r.body, &m), "body %q", r.body)
	return m
}

// code checks an error answer's shape and returns its code.
func (r response) code(t *testing.T) string {
	t.Helper()
	var e map[string]any
	require.NoError(t, json.Unmarshal(r.body, &e), "body %q", r.body)
	require.Len(t, e, 2, "an error is exactly {code, message}: %s", r.body)
	require.NotEmpty(t, e["message"])
	code, _ := e["code"].(string)
	return code
}

func (in *instance) call(method, path string, body []byte, header http.Header) response {
	in.t.Helper()
	req, err := http.NewRequest(method, in.url+path, bytes.NewReader(body))
	require.NoError(in.t, err)
	for k, v := range header {
		req.Header[k] = v
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := in.client.Do(req)
	require.NoError(in.t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(in.t, err)
	require.Equal(in.t, "application/json; charset=utf-8", resp.Header.Get("Content-Type"), "%s %s", method, path)
	return response{status: resp.StatusCode, header: resp.Header, body: b}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

func adminHeader() http.Header {
	return http.Header{"Authorization": {"Bearer " + testAdmin}}
}

// putSKU creates a SKU through the admin API.
func (in *instance) putSKU(sku string, total, price int64, buckets, limit int) {
	in.t.Helper()
	r := in.call(http.MethodPut, "/api/v1/admin/skus/"+sku, mustJSON(in.t, map[string]any{
		"total": total, "price": price, "buckets": buckets, "per_user_limit": limit,
	}), adminHeader())
	require.Equal(in.t, http.StatusOK, r.status, "%s", r.body)
}

// buy places an order as user, with user's token.
func (in *instance) buy(key, user, sku string, qty int64) response {
	in.t.Helper()
	return in.call(http.MethodPost, "/api/v1/orders", buyBody(in.t, key, user, sku, qty), buyerHeader(in.t, user))
}

// mustBuy places an order as user with their key and returns its id.
func (in *instance) mustBuy(key, user, sku string, qty int64) string {
	in.t.Helper()
	r := in.buy(key, user, sku, qty)
	require.Equal(in.t, http.StatusCreated, r.status, "%s", r.body)
	return r.json(in.t)["order_id"].(string)
}

// buyBody is a buy request with the buyer's key (none when empty); user
// goes into user_id unless it is empty.
func buyBody(t *testing.T, key, user, sku string, qty int64) []byte {
	body := map[string]any{"items": []map[string]any{{"sku_id": sku, "quantity": qty}}}
	if user != "" {
		body["user_id"] = user
	}
	if key != "" {
		body["client_order_id"] = key
	}
	return mustJSON(t, body)
}

// buyRetrying is a well-behaved client: it retries 429 BUSY (units remain,
// too many buyers in flight) until it gets another answer. Safe to call from
// several goroutines: it reports failures with t.Errorf.
func (in *instance) buyRetrying(key, user, sku string, qty int64) response {
	for {
		r := in.buy(key, user, sku, qty)
		if r.status != http.StatusTooManyRequests || !strings.Contains(string(r.body), `"BUSY"`) {
			return r
		}
		time.Sleep(20 * time.Millisecond)
	}
}

type inventoryOut struct {
	SKU         string `json:"sku_id"`
	Total       int64  `json:"total"`
	Available   int64  `json:"redis_available"`
	DBAvailable int64  `json:"db_available"`
	Frozen      int64  `json:"frozen"`
	Sold        int64  `json:"sold"`
	IsSoldOut   bool   `json:"sold_out"`
	BucketCount int    `json:"buckets"`
	// BookingsLeft is nil for a SKU that deducts at the order.
	BookingsLeft *int64 `json:"bookings_left"`
}

// inventory reads sku's stock now, as an operator: the admin token skips
// the public answer's one-second cache.
func (in *instance) inventory(sku string) inventoryOut {
	in.t.Helper()
	r := in.call(http.MethodGet, "/api/v1/inventory/"+sku, nil, adminHeader())
	require.Equal(in.t, http.StatusOK, r.status, "%s", r.body)
	var out inventoryOut
	require.NoError(in.t, json.Unmarshal(r.body, &out))
	return out
}

// order reads an order as an operator (the admin token reads any order).
func (in *instance) order(id string) map[string]any {
	in.t.Helper()
	r := in.call(http.MethodGet, "/api/v1/orders/"+id, nil, adminHeader())
	require.Equal(in.t, http.StatusOK, r.status, "%s", r.body)
	return r.json(in.t)
}

// cancel cancels an order as user.
func (in *instance) cancel(user, id string) response {
	in.t.Helper()
	return in.call(http.MethodPost, "/api/v1/orders/"+id+"/cancel", nil, buyerHeader(in.t, user))
}

func (in *instance) metrics() httpapi.MetricsSnapshot {
	in.t.Helper()
	r := in.call(http.MethodGet, "/metrics", nil, nil)
	require.Equal(in.t, http.StatusOK, r.status)
	var m httpapi.MetricsSnapshot
	require.NoError(in.t, json.Unmarshal(r.body, &m))
	return m
}

// callback is a payment provider's webhook body.
type callback struct {
	OrderID       string `json:"order_id"`
	TransactionID string `json:"transaction_id"`
	Amount        int64  `json:"amount"`
	Status        string `json:"payment_status"`
}

// pay sends a callback signed now with the current secret.
func (in *instance) pay(cb callback) response {
	in.t.Helper()
	body := mustJSON(in.t, cb)
	return in.signed(body, httpapi.Sign(testSecret, time.Now(), body))
}

func (in *instance) signed(body []byte, signature string) response {
	in.t.Helper()
	h := http.Header{}
	if signature != "" {
		h.Set(httpapi.SignatureHeader, signature)
	}
	return in.call(http.MethodPost, "/api/v1/payments/callback", body, h)
}

// payments reads the payments table for an order.
func (s *stack) payments(orderID string) []orderdb.Payment {
	s.t.Helper()
	p, err := s.b.Orders.Payments(context.Background(), orderID)
	require.NoError(s.t, err)
	return p
}

func (s *stack) dbInventory(sku string) orderdb.Inventory {
	s.t.Helper()
	inv, err := s.b.Orders.Inventory(context.Background(), sku)
	require.NoError(s.t, err)
	return inv
}

// countWorkflows asks Temporal's visibility how many order workflows name
// the SKU. Visibility is eventually consistent: poll it.
func (s *stack) countWorkflows(sku string) int64 {
	s.t.Helper()
	resp, err := s.b.Temporal.CountWorkflow(context.Background(), &workflowservice.CountWorkflowExecutionsRequest{
		Namespace: s.cfg.TemporalNamespace,
		Query:     fmt.Sprintf("WorkflowType = '%s' AND SkuIds = '%s'", workflows.OrderWorkflowType, sku),
	})
	require.NoError(s.t, err)
	return resp.GetCount()
}

// serveHTTP serves api through its real http.Server (HTTPServer, with its
// timeouts and protocols) on a loopback port until the test ends, and
// returns the address.
func serveHTTP(t *testing.T, api *httpapi.Server) string {
	t.Helper()
	srv := api.HTTPServer()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		require.NoError(t, srv.Shutdown(ctx))
		require.ErrorIs(t, <-served, http.ErrServerClosed)
	})
	return ln.Addr().String()
}
