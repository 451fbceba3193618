//go:build integration

package httpapi_test

import (
	"bufio"
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/internal/httpapi"
	"github.com/flashsale/flashsale/internal/saletraffic"
	"github.com/flashsale/flashsale/internal/testenv"
)

// A SKU with a 25-hour payment window: its order's pay_by is 25 hours out,
// and every Redis key that stands for the order's unit outlives it by the
// margin (flashsale.MarkerTTL), so the release at the deadline finds them.
// A window out of bounds is refused, saying why, and defines nothing.
func TestPaymentWindowPerSKU(t *testing.T) {
	s := newStack(t, stackOptions{})
	api := s.api
	sku := s.name("window25")
	r := api.call(http.MethodPut, "/api/v1/admin/skus/"+sku, mustJSON(t, map[string]any{
		"total": 3, "price": 100, "buckets": 2, "per_user_limit": 1, "payment_window": "25h",
	}), adminHeader())
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	require.Equal(t, "25h", r.json(t)["payment_window"])

	before := time.Now()
	r = api.buy("k1", s.name("u1"), sku, 1)
	require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
	id := r.json(t)["order_id"].(string)
	payBy, err := time.Parse(time.RFC3339Nano, r.json(t)["pay_by"].(string))
	require.NoError(t, err)
	require.WithinRange(t, payBy, before.Add(25*time.Hour-time.Second), time.Now().Add(25*time.Hour+time.Second))
	o, err := s.b.Orders.Order(t.Context(), id)
	require.NoError(t, err)
	require.Equal(t, payBy.UTC(), o.PayBy, "the database holds the same deadline the workflow's timer runs to")

	// Every key of the SKU with a TTL (the sold-out hint, the "nothing taken
	// here" probes and the sale page's per-second traffic counts aside, none
	// of which stands for a unit) lives past the window plus a day's margin.
	rdb := testenv.Redis(t)
	ctx := context.Background()
	longest := flashsale.MarkerTTL - time.Minute
	checkTTLs := func() int {
		t.Helper()
		n := 0
		for _, pattern := range []string{"fs:{sku:" + sku + "*", "fs:placed:" + id} {
			iter := rdb.Scan(ctx, 0, pattern, 1000).Iterator()
			for iter.Next(ctx) {
				key := iter.Val()
				ttl, err := rdb.PTTL(ctx, key).Result()
				require.NoError(t, err)
				if ttl < 0 || strings.HasSuffix(key, ":soldout") || strings.HasPrefix(key, saletraffic.Key(sku)+":") {
					continue
				}
				if v, err := rdb.Get(ctx, key).Result(); err == nil && v == "0" && strings.Contains(key, ":order:") {
					continue
				}
				require.GreaterOrEqual(t, ttl, longest, "key %s lives %s, less than the window plus the margin", key, ttl)
				require.Greater(t, ttl, 25*time.Hour+23*time.Hour, key)
				n++
			}
			require.NoError(t, iter.Err())
		}
		return n
	}
	require.GreaterOrEqual(t, checkTTLs(), 3, "the take marker, the buyer's claim and the placed id at least")

	// The unit comes back when the order closes, and the release's
	// tombstones keep the same lifetime.
	require.Equal(t, http.StatusOK, api.cancel(s.name("u1"), id).status)
	require.Eventually(t, func() bool {
		inv := api.inventory(sku)
		return inv.Available == 3 && inv.DBAvailable == 3 && inv.Frozen == 0
	}, 10*time.Second, 50*time.Millisecond)
	checkTTLs()
	s.checkClean(sku)

	for _, w := range []string{"73h", "30s", "200h"} {
		bad := s.name("window-bad")
		r := api.call(http.MethodPut, "/api/v1/admin/skus/"+bad, mustJSON(t, map[string]any{
			"total": 1, "price": 100, "payment_window": w,
		}), adminHeader())
		require.Equal(t, http.StatusBadRequest, r.status, "%s", r.body)
		require.Equal(t, "INVALID_TERMS", r.code(t))
		require.Equal(t, "payment_window "+w+" is outside 1m-72h: Redis keeps an order's units for 96h "+
			"(the longest window plus a day), so a longer window would lose units when its keys expire", r.json(t)["message"])
		_, err := s.b.Orders.Inventory(t.Context(), bad)
		require.Equal(t, flashsale.UnknownSKU, flashsale.ErrorCode(err), "a refused window defines nothing")
	}
	r = api.call(http.MethodPut, "/api/v1/admin/skus/"+s.name("window-typo"), []byte(`{"total":1,"price":1,"payment_window":"15 minutes"}`), adminHeader())
	require.Equal(t, http.StatusBadRequest, r.status, "%s", r.body)
	require.Equal(t, "INVALID_REQUEST", r.code(t))
}

// putTerms defines sku with one unit per buyer and the given terms.
func (in *instance) putTerms(sku string, total int64, terms map[string]any) {
	in.t.Helper()
	body := map[string]any{"total": total, "price": 100, "buckets": 2, "per_user_limit": 1}
	maps.Copy(body, terms)
	r := in.call(http.MethodPut, "/api/v1/admin/skus/"+sku, mustJSON(in.t, body), adminHeader())
	require.Equal(in.t, http.StatusOK, r.status, "%s", r.body)
}

// payByOf is the pay_by of a buy's 201 answer.
func payByOf(t *testing.T, r response) time.Time {
	t.Helper()
	at, err := time.Parse(time.RFC3339Nano, r.json(t)["pay_by"].(string))
	require.NoError(t, err)
	return at
}

// awaitOrder waits until the order shows status, and returns it.
func (in *instance) awaitOrder(id, status string) map[string]any {
	in.t.Helper()
	var o map[string]any
	require.Eventually(in.t, func() bool {
		o = in.order(id)
		return o["status"] == status
	}, 20*time.Second, 50*time.Millisecond, "order %s never %s", id, status)
	return o
}

// Money at the deadline's edge, by the SKU's rule. On a capture_if_held
// SKU a payment 2 s past pay_by, while the order still holds its unit, is
// captured: PAID, no refund. One that comes after the order released its
// unit and the unit was bought again is recorded for refund, and the unit
// is sold once. On a refund SKU (the default) the same 2 s are refunded and
// the order expires, as before terms.
func TestLatePaymentByRule(t *testing.T) {
	s := newStack(t, stackOptions{paymentTimeout: 2 * time.Second})
	api := s.api
	capture, refund := s.name("capture"), s.name("refund")
	api.putTerms(capture, 1, map[string]any{"late_payment": "capture_if_held"})
	api.putTerms(refund, 1, nil)

	late := func(sku, user string) (string, response) {
		t.Helper()
		r := api.buy("k", s.name(user), sku, 1)
		require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
		id := r.json(t)["order_id"].(string)
		time.Sleep(time.Until(payByOf(t, r).Add(2 * time.Second)))
		return id, api.pay(callback{OrderID: id, TransactionID: id + "-tx", Amount: 100, Status: "SUCCESS"})
	}

	id, r := late(capture, "c1")
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	require.Equal(t, map[string]any{"order_id": id, "status": "PAID"}, r.json(t), "captured, no refund")
	require.Equal(t, flashsale.PaymentCaptured, s.payments(id)[0].Status)
	require.Len(t, s.payments(id), 1)
	inv := s.dbInventory(capture)
	require.Equal(t, [3]int64{0, 0, 1}, [3]int64{inv.Available, inv.Frozen, inv.Sold})

	id, r = late(refund, "r1")
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	require.Equal(t, "REQUIRED", r.json(t)["refund"], "a refund SKU keeps today's rule")
	api.awaitOrder(id, "EXPIRED")
	require.Equal(t, flashsale.PaymentRefundRequired, s.payments(id)[0].Status)

	// After the release: the unit is sold to another buyer, and the first
	// buyer's money goes back.
	resold := s.name("resold")
	api.putTerms(resold, 1, map[string]any{"late_payment": "capture_if_held"})
	r = api.buy("k", s.name("first"), resold, 1)
	require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
	first := r.json(t)["order_id"].(string)
	api.awaitOrder(first, "EXPIRED")
	second := api.mustBuy("k", s.name("second"), resold, 1)
	r = api.pay(callback{OrderID: first, TransactionID: first + "-tx", Amount: 100, Status: "SUCCESS"})
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	require.Equal(t, "REQUIRED", r.json(t)["refund"])
	require.Equal(t, flashsale.PaymentRefundRequired, s.payments(first)[0].Status)
	r = api.pay(callback{OrderID: second, TransactionID: second + "-tx", Amount: 100, Status: "SUCCESS"})
	require.Equal(t, "PAID", r.json(t)["status"], "%s", r.body)
	inv = s.dbInventory(resold)
	require.Equal(t, [3]int64{0, 0, 1}, [3]int64{inv.Available, inv.Frozen, inv.Sold}, "sold once: oversold 0")
	require.Equal(t, int64(0), api.inventory(resold).Available)
	s.checkClean(capture, refund, resold)
}

// A FAILED callback releases the unit at once on a SKU that says so; on
// another SKU the order keeps its unit until its deadline.
func TestFailedPaymentReleasesWhereTheSKUSaysSo(t *testing.T) {
	s := newStack(t, stackOptions{paymentTimeout: 10 * time.Minute})
	api := s.api
	release, keep := s.name("release"), s.name("keep")
	api.putTerms(release, 1, map[string]any{"release_on_failed_payment": true})
	api.putTerms(keep, 1, nil)
	failed := func(sku string) string {
		t.Helper()
		id := api.mustBuy("k", s.name("u-"+sku), sku, 1)
		r := api.pay(callback{OrderID: id, TransactionID: id + "-tx", Amount: 100, Status: "FAILED"})
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		return id
	}
	id := failed(release)
	o := api.awaitOrder(id, "CANCELLED")
	require.Equal(t, "PAYMENT_FAILED", o["reason"])
	require.Eventually(t, func() bool { inv := api.inventory(release); return inv.Available == 1 && inv.DBAvailable == 1 },
		10*time.Second, 50*time.Millisecond, "the unit is back on sale at once")
	api.mustBuy("k", s.name("next"), release, 1)

	id = failed(keep)
	time.Sleep(time.Second)
	require.Equal(t, "PENDING_PAYMENT", api.order(id)["status"], "held until its deadline")
	require.Equal(t, int64(1), api.inventory(keep).Frozen)
	require.NoError(t, s.b.Temporal.CancelWorkflow(t.Context(), "order-"+id, ""))
	api.awaitOrder(id, "CANCELLED")
	s.checkClean(release, keep)
}

// The provider extends an order's hold once: pay_by moves in the answer,
// the database and the order's wait, a payment after the first deadline
// but before the new one is in time; a second extension is refused.
func TestHoldExtendedOnce(t *testing.T) {
	s := newStack(t, stackOptions{paymentTimeout: 3 * time.Second})
	api := s.api
	sku := s.name("hold")
	api.putTerms(sku, 1, nil)
	r := api.buy("k", s.name("u"), sku, 1)
	require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
	id, payBy := r.json(t)["order_id"].(string), payByOf(t, r)
	hold := func(body map[string]any) response {
		t.Helper()
		b := mustJSON(t, body)
		return api.call(http.MethodPost, "/api/v1/payments/hold", b,
			http.Header{httpapi.SignatureHeader: {httpapi.Sign(testSecret, time.Now(), b)}})
	}
	r = hold(map[string]any{"order_id": id, "extend_by": "2h"})
	require.Equal(t, http.StatusBadRequest, r.status, "over the bound: %s", r.body)
	require.Equal(t, "INVALID_REQUEST", r.code(t))
	r = hold(map[string]any{"order_id": id, "extend_by": "10s", "reason": "3-D Secure started"})
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	moved := payBy.Add(10 * time.Second)
	require.Equal(t, map[string]any{"order_id": id, "status": "PENDING_PAYMENT", "pay_by": moved.UTC().Format(time.RFC3339Nano),
		"hold_extended": true}, r.json(t))
	o, err := s.b.Orders.Order(t.Context(), id)
	require.NoError(t, err)
	require.Equal(t, moved.UTC(), o.PayBy)
	require.True(t, o.HoldExtended)

	r = hold(map[string]any{"order_id": id, "extend_by": "10s"})
	require.Equal(t, http.StatusConflict, r.status, "%s", r.body)
	require.Equal(t, "HOLD_ALREADY_EXTENDED", r.code(t))
	r = hold(map[string]any{"order_id": id, "extend_by": "2h"})
	require.Equal(t, http.StatusConflict, r.status, "the second is refused whatever it asks: %s", r.body)
	r = api.call(http.MethodPost, "/api/v1/payments/hold", mustJSON(t, map[string]any{"order_id": id, "extend_by": "10s"}), nil)
	require.Equal(t, http.StatusUnauthorized, r.status, "unsigned: %s", r.body)

	time.Sleep(time.Until(payBy.Add(6 * time.Second)))
	require.Equal(t, "PENDING_PAYMENT", api.order(id)["status"], "past the first deadline and its grace, still held")
	r = api.pay(callback{OrderID: id, TransactionID: id + "-tx", Amount: 100, Status: "SUCCESS"})
	require.Equal(t, map[string]any{"order_id": id, "status": "PAID"}, r.json(t), "in time by the new deadline")

	s.checkClean(sku)
}

// A SKU that deducts at payment, oversubscribed 3x and paid in random
// order, all at once: the door starts no more orders than its bookings
// (stock x 3), the payments take exactly its stock, and every other one is
// recorded for refund once, its order CANCELLED as SOLD_OUT. A SKU held at
// the order beside it sells as before; starter check is clean for both.
func TestDeductAtPaymentSellsExactlyTheStock(t *testing.T) {
	s := newStack(t, stackOptions{paymentTimeout: 10 * time.Minute, buyRate: 1000})
	api := s.api
	pay, hold := s.name("pay"), s.name("hold")
	const stock = 6
	api.putTerms(pay, stock, map[string]any{"deduct": "payment", "overbook": 3})
	api.putTerms(hold, 3, nil)

	// 24 buyers for 18 bookings.
	var mu sync.Mutex
	var booked []string
	refused := 0
	var wg sync.WaitGroup
	for i := range 24 {
		wg.Go(func() {
			r := api.buyRetrying("k", s.name(fmt.Sprintf("b%02d", i)), pay, 1)
			mu.Lock()
			defer mu.Unlock()
			switch r.status {
			case http.StatusCreated:
				booked = append(booked, r.json(t)["order_id"].(string))
			case http.StatusConflict:
				refused++
				assert.Equal(t, "SOLD_OUT", r.code(t))
			default:
				t.Errorf("buy: %d %s", r.status, r.body)
			}
		})
	}
	wg.Wait()
	require.Len(t, booked, 3*stock, "bookings: stock x overbook")
	require.Equal(t, 24-3*stock, refused)
	inv := s.dbInventory(pay)
	require.Equal(t, [3]int64{stock, 0, 0}, [3]int64{inv.Available, inv.Frozen, inv.Sold}, "booking takes no unit")
	require.Equal(t, int64(stock), api.inventory(pay).Available, "the units stay in Redis until paid")
	require.Equal(t, new(int64(0)), api.inventory(pay).BookingsLeft, "what a buyer can still book")
	require.True(t, api.inventory(pay).IsSoldOut, "no booking left: sold out, though the units are still in Redis")
	require.Equal(t, http.StatusConflict, api.buyRetrying("k", s.name("late"), pay, 1).status, "no booking left: the door refuses")

	// Every booked order pays, in random order, all at once; a few
	// providers send their callback twice.
	rand.Shuffle(len(booked), func(i, j int) { booked[i], booked[j] = booked[j], booked[i] })
	for i, id := range booked {
		wg.Go(func() {
			cb := callback{OrderID: id, TransactionID: id + "-tx", Amount: 100, Status: "SUCCESS"}
			for range 1 + i%3/2 {
				r := api.pay(cb)
				assert.Contains(t, []int{http.StatusOK, http.StatusAccepted}, r.status, "%s", r.body)
			}
		})
	}
	wg.Wait()
	paid, refunds := 0, 0
	for _, id := range booked {
		o := api.order(id)
		for o["status"] == "PENDING_PAYMENT" {
			time.Sleep(50 * time.Millisecond)
			o = api.order(id)
		}
		ps := s.payments(id)
		require.Len(t, ps, 1, "one payment row per order: %s", id)
		switch o["status"] {
		case "PAID":
			paid++
			require.Equal(t, flashsale.PaymentCaptured, ps[0].Status)
		case "CANCELLED":
			refunds++
			require.Equal(t, "SOLD_OUT", o["reason"])
			require.Equal(t, flashsale.PaymentRefundRequired, ps[0].Status)
			require.Equal(t, "SOLD_OUT", ps[0].Reason)
		default:
			t.Fatalf("order %s ended %v", id, o["status"])
		}
	}
	require.Equal(t, stock, paid, "exactly the stock sold")
	require.Equal(t, 2*stock, refunds, "the rest refunded, once each")
	inv = s.dbInventory(pay)
	require.Equal(t, [3]int64{0, 0, stock}, [3]int64{inv.Available, inv.Frozen, inv.Sold}, "oversold 0")
	require.Equal(t, int64(0), api.inventory(pay).Available)

	// The hold SKU beside it: three units held at the order, a fourth
	// buyer refused, the three paid.
	var held []string
	for i := range 3 {
		held = append(held, api.mustBuy("k", s.name(fmt.Sprintf("h%d", i)), hold, 1))
	}
	require.Equal(t, http.StatusConflict, api.buyRetrying("k", s.name("h3"), hold, 1).status)
	require.Equal(t, int64(3), s.dbInventory(hold).Frozen)
	for _, id := range held {
		r := api.pay(callback{OrderID: id, TransactionID: id + "-tx", Amount: 100, Status: "SUCCESS"})
		require.Equal(t, "PAID", r.json(t)["status"], "%s", r.body)
	}
	require.Equal(t, int64(3), s.dbInventory(hold).Sold)
	s.checkClean(pay, hold)
}

// A buy of a held SKU makes no booking call: the door's stock read found
// the SKU taking no bookings, and the order's input says so
// (workflows.OrderInput.Deduct). A buy of a SKU sold at payment books as
// before. Redis's MONITOR shows every command it runs, those of the Lua
// scripts included, so the order's booking key (named in book.lua's call)
// appears for the booked order and never for the held one.
func TestHeldBuyMakesNoBookingCall(t *testing.T) {
	s := newStack(t, stackOptions{paymentTimeout: 10 * time.Minute})
	api := s.api
	hold, pay := s.name("held"), s.name("booked")
	api.putTerms(hold, 2, nil)
	api.putTerms(pay, 2, map[string]any{"deduct": "payment", "overbook": 3})
	require.Nil(t, api.inventory(hold).BookingsLeft)
	require.Equal(t, new(int64(6)), api.inventory(pay).BookingsLeft)

	seen := monitorRedis(t)
	held := api.mustBuy("k", s.name("h"), hold, 1)
	booked := api.mustBuy("k", s.name("b"), pay, 1)
	lines := seen()
	bookingOf := func(sku, id string) string { return "fs:{sku:" + sku + "}:booking:" + id }
	touched := func(key string) int {
		n := 0
		for _, l := range lines {
			if strings.Contains(l, key) {
				n++
			}
		}
		return n
	}
	require.Zero(t, touched(bookingOf(hold, held)), "the held order asks for no booking")
	require.Positive(t, touched(bookingOf(pay, booked)), "the booked order books")
	rdb := testenv.Redis(t)
	ctx := context.Background()
	require.Equal(t, int64(1), rdb.Exists(ctx, bookingOf(pay, booked)).Val())
	require.Equal(t, int64(1), s.dbInventory(hold).Frozen, "held at the order")
	require.Equal(t, int64(0), s.dbInventory(pay).Frozen, "booked, nothing frozen")
	require.Equal(t, new(int64(5)), api.inventory(pay).BookingsLeft)
	require.False(t, api.inventory(pay).IsSoldOut, "bookings left: on sale")
	require.Equal(t, int64(1), api.inventory(hold).Available)
}

// A SKU that deducts at payment is sold out once its last booking is
// taken, though its units stay in Redis until paid: its stock read and the
// live sale page say so before any buyer has been refused (no refusal has
// set the sold-out flag yet).
func TestLastBookingSellsOut(t *testing.T) {
	s := newStack(t, stackOptions{paymentTimeout: 10 * time.Minute})
	api := s.api
	pay := s.name("booked")
	api.putTerms(pay, 1, map[string]any{"deduct": "payment", "overbook": 2})
	live := func() map[string]any {
		r := api.call(http.MethodGet, "/api/v1/skus/"+pay+"/live", nil, nil)
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		return r.json(t)
	}
	require.False(t, api.inventory(pay).IsSoldOut)
	require.Equal(t, false, live()["sold_out"])

	api.mustBuy("k", s.name("a"), pay, 1)
	require.False(t, api.inventory(pay).IsSoldOut, "one booking left")
	api.mustBuy("k", s.name("b"), pay, 1)
	inv := api.inventory(pay)
	require.Equal(t, new(int64(0)), inv.BookingsLeft)
	require.Equal(t, int64(1), inv.Available, "the unit stays in Redis until paid")
	require.True(t, inv.IsSoldOut, "no booking left: a buy would be refused")
	require.Eventually(t, func() bool { return live()["sold_out"] == true }, // a snapshot up to 1 s old
		5*time.Second, 100*time.Millisecond, "the live sale page says sold out too")
	require.Equal(t, http.StatusConflict, api.buyRetrying("k", s.name("c"), pay, 1).status)
}

// monitorRedis starts Redis's MONITOR and returns what stops it: every
// command Redis ran from the start until the stop, one line each. The stop
// sends a marker of its own and reads up to it, so nothing before it is
// missed and nothing waits on a clock.
func monitorRedis(t *testing.T) func() []string {
	t.Helper()
	conn, err := net.Dial("tcp", testenv.RedisAddr())
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	_, err = conn.Write([]byte("MONITOR\r\n"))
	require.NoError(t, err)
	r := bufio.NewReader(conn)
	line, err := r.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "+OK\r\n", line, "monitoring from here")
	return func() []string {
		t.Helper()
		marker := fmt.Sprintf("monitor-end-%d", rand.Uint64())
		require.NoError(t, testenv.Redis(t).Echo(context.Background(), marker).Err())
		var lines []string
		for {
			line, err := r.ReadString('\n')
			require.NoError(t, err)
			if strings.Contains(line, marker) {
				return lines
			}
			lines = append(lines, line)
		}
	}
}
