//go:build integration

package httpapi_test

// The hostile-client probe of issue 13, as tests: each case failed on the
// API before buyers were authenticated and orders owned.

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/internal/httpapi"
	"github.com/flashsale/flashsale/internal/identity"
	"github.com/flashsale/flashsale/workflows"
)

// TestBuyerMustAuthenticate: no token, a forged one, an expired one: 401
// UNAUTHENTICATED with a challenge, and nothing reaches the edge.
func TestBuyerMustAuthenticate(t *testing.T) {
	s := newStack(t, stackOptions{})
	api := s.api
	sku := s.name("sku")
	api.putSKU(sku, 5, 100, 2, 1)
	body := buyBody(t, s.name("o1"), "", sku, 1)

	forged, err := (&identity.Minter{Secret: []byte("not-the-shops-secret-0123456789abcdef")}).Token(s.name("u"), time.Hour)
	require.NoError(t, err)
	expired, err := (&identity.Minter{Secret: []byte(testBuyerKey), Now: func() time.Time { return time.Now().Add(-2 * time.Hour) }}).
		Token(s.name("u"), time.Hour)
	require.NoError(t, err)
	for name, h := range map[string]http.Header{
		"no header":   nil,
		"basic auth":  {"Authorization": {"Basic dTpw"}},
		"forged":      {"Authorization": {"Bearer " + forged}},
		"expired":     {"Authorization": {"Bearer " + expired}},
		"admin token": adminHeader(), // operators do not buy
	} {
		t.Run(name, func(t *testing.T) {
			for _, req := range []struct{ method, path string }{
				{http.MethodPost, "/api/v1/orders"},
				{http.MethodGet, "/api/v1/skus/" + sku + "/waitlist/me"},
				{http.MethodPost, "/api/v1/skus/" + sku + "/waitlist"},
			} {
				var b []byte
				if req.path == "/api/v1/orders" {
					b = body
				}
				r := api.call(req.method, req.path, b, h)
				require.Equal(t, http.StatusUnauthorized, r.status, "%s %s: %s", req.method, req.path, r.body)
				require.Equal(t, "UNAUTHENTICATED", r.code(t))
				require.Equal(t, `Bearer realm="flashsale"`, r.header.Get("WWW-Authenticate"))
			}
		})
	}
	for _, req := range []struct{ method, path string }{
		{http.MethodGet, "/api/v1/orders/" + s.name("o1")},
		{http.MethodPost, "/api/v1/orders/" + s.name("o1") + "/cancel"},
	} {
		r := api.call(req.method, req.path, nil, nil)
		require.Equal(t, http.StatusUnauthorized, r.status, "%s", r.body)
		require.Equal(t, "UNAUTHENTICATED", r.code(t))
	}
	m := api.metrics()
	require.Zero(t, m.Edge.Requests, "no unauthenticated buy reached the edge")
	require.Zero(t, m.WorkflowsStarted)
}

// TestBuyerIsTheTokensSubject: one client with one token cannot rotate
// user ids past the per-user limit, nor exhaust a victim's limit or rate
// budget by buying in their name.
func TestBuyerIsTheTokensSubject(t *testing.T) {
	s := newStack(t, stackOptions{buyRate: 1000})
	api := s.api
	sku := s.name("sku")
	const units = 30
	api.putSKU(sku, units, 100, 4, 1)
	mallory, victim := s.name("mallory"), s.name("victim")
	malloryAuth := buyerHeader(t, mallory)

	// Rotating ids in the body: every one refused, nothing reserved.
	answers := make([]response, units)
	var wg sync.WaitGroup
	for i := range units {
		wg.Go(func() {
			answers[i] = api.call(http.MethodPost, "/api/v1/orders",
				buyBody(t, s.name(fmt.Sprintf("rot-%d", i)), s.name(fmt.Sprintf("sock-%d", i)), sku, 1), malloryAuth)
		})
	}
	wg.Wait()
	for _, r := range answers {
		require.Equal(t, http.StatusForbidden, r.status, "%s", r.body)
		require.Equal(t, "USER_MISMATCH", r.code(t))
	}
	// Orders in the victim's name: refused the same way.
	r := api.call(http.MethodPost, "/api/v1/orders", buyBody(t, s.name("in-victims-name"), victim, sku, 1), malloryAuth)
	require.Equal(t, http.StatusForbidden, r.status, "%s", r.body)
	require.Equal(t, inventoryOut{SKU: sku, Total: units, Available: units, DBAvailable: units, BucketCount: 4}, api.inventory(sku))
	require.Zero(t, api.metrics().WorkflowsStarted)

	// Mallory's own orders, all at once, without user_id: the per-user
	// limit (1) holds exactly.
	for i := range units {
		wg.Go(func() {
			answers[i] = api.call(http.MethodPost, "/api/v1/orders", buyBody(t, s.name(fmt.Sprintf("own-%d", i)), "", sku, 1), malloryAuth)
		})
	}
	wg.Wait()
	created, limited := 0, 0
	for _, r := range answers {
		switch {
		case r.status == http.StatusCreated:
			created++
		case r.status == http.StatusUnprocessableEntity && r.code(t) == "LIMIT_EXCEEDED":
			limited++
		case r.status == http.StatusTooManyRequests && r.code(t) == "BUSY":
			// The edge's window; a well-behaved client retries.
		default:
			t.Fatalf("unexpected answer %d %s", r.status, r.body)
		}
	}
	require.Equal(t, 1, created, "one unit per buyer")
	require.Positive(t, limited)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Equal(c, inventoryOut{SKU: sku, Total: units, Available: units - 1, DBAvailable: units - 1, Frozen: 1, BucketCount: 4},
			api.inventory(sku))
	}, 10*time.Second, 50*time.Millisecond)

	// The victim's own buy is untouched by all of that.
	r = api.buy(s.name("victim-o1"), victim, sku, 1)
	require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
	require.Equal(t, victim, api.order(orderID(victim, s.name("victim-o1")))["user_id"])
}

// TestOrdersBelongToTheirBuyer: another buyer can neither read nor cancel
// an order, and cannot tell it from one that does not exist; operators can
// do both.
func TestOrdersBelongToTheirBuyer(t *testing.T) {
	s := newStack(t, stackOptions{})
	api := s.api
	sku := s.name("sku")
	api.putSKU(sku, 2, 100, 2, 1)
	alice, bob := s.name("alice"), s.name("bob")
	id := api.mustBuy(s.name("o1"), alice, sku, 1)

	unknown := api.call(http.MethodGet, "/api/v1/orders/"+s.name("nope"), nil, buyerHeader(t, bob))
	require.Equal(t, http.StatusNotFound, unknown.status)
	r := api.call(http.MethodGet, "/api/v1/orders/"+id, nil, buyerHeader(t, bob))
	require.Equal(t, http.StatusNotFound, r.status, "%s", r.body)
	require.JSONEq(t, string(unknown.body), string(r.body), "another buyer's order reads as no order at all")
	r = api.cancel(bob, id)
	require.Equal(t, http.StatusNotFound, r.status, "%s", r.body)
	require.Equal(t, "ORDER_NOT_FOUND", r.code(t))

	r = api.call(http.MethodGet, "/api/v1/orders/"+id, nil, buyerHeader(t, alice))
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	require.Equal(t, "PENDING_PAYMENT", r.json(t)["status"], "bob's cancel changed nothing")

	// Operators hold the admin token: they read and cancel any order.
	require.Equal(t, alice, api.order(id)["user_id"])
	r = api.call(http.MethodPost, "/api/v1/orders/"+id+"/cancel", nil, adminHeader())
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	require.Equal(t, "CANCELLED", r.json(t)["status"])
}

func (in *instance) waitlistMe(sku, user string) response {
	in.t.Helper()
	return in.call(http.MethodGet, "/api/v1/skus/"+sku+"/waitlist/me", nil, buyerHeader(in.t, user))
}

// TestWaitlistIsBoundedAndOwned: a flood of joins fills the capacity and
// no more; a buyer sees their own place and offer; the offer's predictable
// id does not let anyone else cancel it.
func TestWaitlistIsBoundedAndOwned(t *testing.T) {
	s := newStack(t, stackOptions{buyRate: 1000})
	api := s.api
	sku := s.name("wl")
	api.putSKU(sku, 1, 100, 2, 1)
	holder := s.name("holder")
	orderA := api.mustBuy(s.name("oa"), holder, sku, 1)

	// 1 unit x WaitlistPerUnit (3) places, 40 bots racing for them.
	const bots = 40
	answers := make([]response, bots)
	var wg sync.WaitGroup
	for i := range bots {
		wg.Go(func() { answers[i] = api.joinWaitlist(sku, s.name(fmt.Sprintf("bot-%02d", i))) })
	}
	wg.Wait()
	joined, full := 0, 0
	var first []string
	for i, r := range answers {
		switch {
		case r.status == http.StatusCreated:
			joined++
			first = append(first, s.name(fmt.Sprintf("bot-%02d", i)))
		case r.status == http.StatusConflict && r.code(t) == "WAITLIST_FULL":
			full++
		default:
			t.Fatalf("unexpected answer %d %s", r.status, r.body)
		}
	}
	require.Equal(t, int(httpapi.DefaultWaitlistPerUnit), joined)
	require.Equal(t, bots-joined, full)
	// A buyer already waiting is still answered with their place.
	r := api.joinWaitlist(sku, first[0])
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)

	r = api.waitlistMe(sku, s.name("stranger"))
	require.Equal(t, http.StatusNotFound, r.status, "%s", r.body)
	require.Equal(t, "NOT_ON_WAITLIST", r.code(t))
	positions := map[float64]string{}
	for _, u := range first {
		r := api.waitlistMe(sku, u)
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		o := r.json(t)
		require.Equal(t, u, o["user_id"])
		positions[o["position"].(float64)] = u
	}
	require.Len(t, positions, joined, "every waiting buyer has a place of their own")
	next := positions[1]

	// The holder cancels; the unit is offered to the first in line, who
	// finds it under /waitlist/me.
	require.Equal(t, http.StatusOK, api.cancel(holder, orderA).status)
	offer := flashsale.WaitlistOrderID(orderA)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		r := api.waitlistMe(sku, next)
		if assert.Equal(c, http.StatusOK, r.status) {
			assert.Equal(c, map[string]any{"sku_id": sku, "user_id": next, "offer_order_id": offer}, r.json(t))
		}
	}, 10*time.Second, 50*time.Millisecond)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Equal(c, "PENDING_PAYMENT", api.order(offer)["status"])
	}, 10*time.Second, 50*time.Millisecond)

	// The holder knows the offer's id (wl-<their order>); it is not theirs.
	r = api.cancel(holder, offer)
	require.Equal(t, http.StatusNotFound, r.status, "%s", r.body)
	require.Equal(t, "PENDING_PAYMENT", api.order(offer)["status"])
	r = api.call(http.MethodGet, "/api/v1/orders/"+offer, nil, buyerHeader(t, next))
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	require.Equal(t, next, r.json(t)["user_id"])
}

// TestWaitlistJoinsAreRateLimited: joins spend a per-buyer budget like
// buys do.
func TestWaitlistJoinsAreRateLimited(t *testing.T) {
	s := newStack(t, stackOptions{buyRate: 1})
	api := s.api
	sku := s.name("wl")
	api.putSKU(sku, 1, 100, 2, 1)
	require.Equal(t, http.StatusCreated, api.buy(s.name("oa"), s.name("holder"), sku, 1).status)

	const tries = 10
	start := time.Now()
	var ok, limited atomic.Int64
	var wg sync.WaitGroup
	for range tries {
		wg.Go(func() {
			r := api.joinWaitlist(sku, s.name("eager"))
			switch {
			case r.status == http.StatusCreated || r.status == http.StatusOK:
				ok.Add(1)
			case r.status == http.StatusTooManyRequests && r.code(t) == "RATE_LIMITED" && r.header.Get("Retry-After") != "":
				limited.Add(1)
			default:
				t.Errorf("unexpected answer %d %s", r.status, r.body)
			}
		})
	}
	wg.Wait()
	// One join a second: however slow the machine, no more got through
	// than the seconds the burst took allow.
	allowed := 1 + int64(time.Since(start)/time.Second)
	require.GreaterOrEqual(t, ok.Load(), int64(1))
	require.LessOrEqual(t, ok.Load(), allowed)
	require.Equal(t, int64(tries), ok.Load()+limited.Load())
}

// logRecords is a slog handler that keeps what it is given.
type logRecords struct {
	mu      sync.Mutex
	records []slog.Record
}

func (l *logRecords) Enabled(context.Context, slog.Level) bool { return true }
func (l *logRecords) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.records = append(l.records, r.Clone())
	return nil
}
func (l *logRecords) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logRecords) WithGroup(string) slog.Handler      { return l }

// find returns the records at level or above, and those with message msg.
func (l *logRecords) find(level slog.Level, msg string) (atLevel, withMsg []slog.Record) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, r := range l.records {
		if r.Level >= level {
			atLevel = append(atLevel, r)
		}
		if r.Message == msg {
			withMsg = append(withMsg, r)
		}
	}
	return atLevel, withMsg
}

// TestClientHangUp: a buyer who gives up while their order is on its way
// is logged once, at INFO, as 499; no 500, no ERROR, and the edge does not
// take Redis for down.
func TestClientHangUp(t *testing.T) {
	s := newStack(t, stackOptions{})
	sku := s.name("sku")
	s.api.putSKU(sku, 5, 100, 2, 1)

	// An instance on a task queue no worker polls: the order's placement
	// waits until the client hangs up.
	logs := &logRecords{}
	cfg := s.cfg
	cfg.TaskQueue = "nobody-polls-" + s.id
	b := s.sys.Connect(cfg, slog.New(logs))
	server, err := httpapi.New(deps(t, b), s.apiConfig())
	require.NoError(t, err)
	in := startInstance(t, server, true)

	buyer := s.name("impatient")
	order := s.name("o1")
	t.Cleanup(func() {
		_ = b.Temporal.TerminateWorkflow(context.Background(), workflows.OrderWorkflowID(order), "", "test over")
	})
	req, err := http.NewRequest(http.MethodPost, in.url+"/api/v1/orders", bytes.NewReader(buyBody(t, order, buyer, sku, 1)))
	require.NoError(t, err)
	req.Header = buyerHeader(t, buyer)
	req.Header.Set("Content-Type", "application/json")
	impatient := &http.Client{Timeout: 500 * time.Millisecond}
	_, err = impatient.Do(req)
	var netErr net.Error
	require.ErrorAs(t, err, &netErr, "the client gave up")
	require.True(t, netErr.Timeout(), "%v", err)

	require.EventuallyWithT(t, func(c *assert.CollectT) {
		_, hangUps := logs.find(slog.LevelInfo, "client closed request")
		if assert.Len(c, hangUps, 1) {
			var status int64
			hangUps[0].Attrs(func(a slog.Attr) bool {
				if a.Key == "status" {
					status = a.Value.Int64()
				}
				return true
			})
			assert.Equal(c, int64(499), status)
			assert.Equal(c, slog.LevelInfo, hangUps[0].Level)
		}
	}, 35*time.Second, 50*time.Millisecond)
	errs, _ := logs.find(slog.LevelError, "")
	require.Empty(t, errs, "a hang-up is not an error")
	m := server.Metrics()
	require.Equal(t, int64(1), m.Responses["499"])
	require.Zero(t, m.Responses["500"])
	require.Zero(t, m.Responses["503"])
	require.Zero(t, m.Edge.Unavailable)
	require.Zero(t, m.Edge.Degraded)
}

// TestReusedTransactionCannotWedgeAnOrder: a signed callback carrying a
// transaction id already captured for order A, sent for open order B, for
// open order C that is then never paid, and for C once closed, is answered
// 409 TRANSACTION_CONFLICT every time. B stays payable with its own
// transaction; C expires on time and its unit goes back; nothing is
// recorded for B or C under A's transaction, so no provider refunds A's
// sale on our word.
func TestReusedTransactionCannotWedgeAnOrder(t *testing.T) {
	s := newStack(t, stackOptions{paymentTimeout: 6 * time.Second})
	api := s.api
	sku := s.name("sku")
	api.putSKU(sku, 5, 700, 2, 1)
	a, b, c := api.mustBuy(s.name("oa"), s.name("u0"), sku, 1), api.mustBuy(s.name("ob"), s.name("u1"), sku, 1),
		api.mustBuy(s.name("oc"), s.name("u2"), sku, 1)
	t1 := s.name("t1")
	r := api.pay(callback{OrderID: a, TransactionID: t1, Amount: 700, Status: "SUCCESS"})
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	require.Equal(t, "PAID", r.json(t)["status"])

	for _, id := range []string{b, c} {
		r := api.pay(callback{OrderID: id, TransactionID: t1, Amount: 700, Status: "SUCCESS"})
		require.Equal(t, http.StatusConflict, r.status, "%s", r.body)
		require.Equal(t, "TRANSACTION_CONFLICT", r.code(t))
		require.Equal(t, "PENDING_PAYMENT", api.order(id)["status"])
	}
	// The order is not wedged: its next payment is applied at once.
	r = api.pay(callback{OrderID: b, TransactionID: s.name("t2"), Amount: 700, Status: "SUCCESS"})
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	require.Equal(t, "PAID", r.json(t)["status"])

	// C is never paid: it expires on time and its unit is back on sale.
	require.EventuallyWithT(t, func(col *assert.CollectT) {
		assert.Equal(col, "EXPIRED", api.order(c)["status"])
		assert.Equal(col, inventoryOut{SKU: sku, Total: 5, Available: 3, DBAvailable: 3, Sold: 2, BucketCount: 2}, api.inventory(sku))
	}, 30*time.Second, 100*time.Millisecond)
	// Closed now: A's transaction is still A's, not a refund owed by C.
	r = api.pay(callback{OrderID: c, TransactionID: t1, Amount: 700, Status: "SUCCESS"})
	require.Equal(t, http.StatusConflict, r.status, "%s", r.body)
	require.Equal(t, "TRANSACTION_CONFLICT", r.code(t))
	require.Empty(t, s.payments(c), "nothing recorded for C")
	require.Len(t, s.payments(b), 1, "only B's own transaction")
	pays := s.payments(a)
	require.Len(t, pays, 1)
	require.Equal(t, t1, pays[0].TransactionID)
}

// TestRequestID: every answer carries X-Request-Id, the caller's when it is
// a sane token, a fresh one otherwise, and the access log line names it.
func TestRequestID(t *testing.T) {
	s := newStack(t, stackOptions{})
	logs := &logRecords{}
	d := deps(t, s.b)
	d.Logger = slog.New(logs)
	server, err := httpapi.New(d, s.apiConfig())
	require.NoError(t, err)
	in := startInstance(t, server, true)

	r := in.call(http.MethodGet, "/healthz", nil, http.Header{"X-Request-Id": {"lb-7f3a:1"}})
	require.Equal(t, "lb-7f3a:1", r.header.Get("X-Request-Id"))
	for _, bad := range []string{"", "two words", strings.Repeat("x", 129)} {
		r := in.call(http.MethodGet, "/healthz", nil, http.Header{"X-Request-Id": {bad}})
		_, err := uuid.Parse(r.header.Get("X-Request-Id"))
		require.NoError(t, err, "%q is replaced by a minted id, got %q", bad, r.header.Get("X-Request-Id"))
	}
	_, lines := logs.find(slog.LevelDebug, "request")
	ids := map[string]bool{}
	for _, l := range lines {
		l.Attrs(func(a slog.Attr) bool {
			if a.Key == "request_id" {
				ids[a.Value.String()] = true
			}
			return true
		})
	}
	require.True(t, ids["lb-7f3a:1"], "the access log names the caller's id: %v", ids)
	require.Len(t, ids, 4, "one id per request")
}
