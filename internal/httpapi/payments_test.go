//go:build integration

package httpapi_test

import (
	"context"
	"encoding/hex"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/internal/httpapi"
	"github.com/flashsale/flashsale/internal/orderdb"
)

func TestPaymentCallback(t *testing.T) {
	s := newStack(t, stackOptions{})
	api := s.api
	sku := s.name("sku")
	api.putSKU(sku, 5, 4999, 4, 1)
	id := api.mustBuy(s.name("o1"), s.name("u1"), sku, 1)
	pending := map[string]any{"order_id": id, "status": "PENDING_PAYMENT"}

	good := callback{OrderID: id, TransactionID: s.name("tx-1"), Amount: 4999, Status: "SUCCESS"}
	goodBody := mustJSON(t, good)
	now := time.Now()
	sig := func(secret string, at time.Time, body []byte) string { return httpapi.Sign(secret, at, body) }
	tampered := strings.Replace(string(goodBody), "4999", "4998", 1)
	wrongHex := "t=" + strconv.FormatInt(now.Unix(), 10) + ",v1=" + hex.EncodeToString(make([]byte, 32))

	// Nothing here may touch the order.
	refused := []struct {
		name      string
		body      []byte
		signature string
		status    int
		code      string
	}{
		{"missing signature", goodBody, "", 401, "BAD_SIGNATURE"},
		{"malformed signature", goodBody, "v1=abc", 401, "BAD_SIGNATURE"},
		{"no v1", goodBody, "t=" + strconv.FormatInt(now.Unix(), 10), 401, "BAD_SIGNATURE"},
		{"wrong signature", goodBody, wrongHex, 401, "BAD_SIGNATURE"},
		{"unknown secret", goodBody, sig("whsec-someone-elses-secret", now, goodBody), 401, "BAD_SIGNATURE"},
		{"tampered body", []byte(tampered), sig(testSecret, now, goodBody), 401, "BAD_SIGNATURE"},
		{"stale", goodBody, sig(testSecret, now.Add(-6*time.Minute), goodBody), 401, "BAD_SIGNATURE"},
		{"from the future", goodBody, sig(testSecret, now.Add(6*time.Minute), goodBody), 401, "BAD_SIGNATURE"},
		{"signed but malformed", []byte(`{"order_id":"` + id + `"`), sig(testSecret, now, []byte(`{"order_id":"`+id+`"`)), 400, "INVALID_REQUEST"},
		{"signed but unknown field", []byte(`{"order_id":"x","transaction_id":"t","amount":1,"payment_status":"SUCCESS","tip":1}`),
			sig(testSecret, now, []byte(`{"order_id":"x","transaction_id":"t","amount":1,"payment_status":"SUCCESS","tip":1}`)), 400, "INVALID_REQUEST"},
		{"signed but bad status", mustJSON(t, callback{OrderID: id, TransactionID: "t", Amount: 1, Status: "MAYBE"}),
			sig(testSecret, now, mustJSON(t, callback{OrderID: id, TransactionID: "t", Amount: 1, Status: "MAYBE"})), 400, "INVALID_REQUEST"},
		{"signed but zero amount", mustJSON(t, callback{OrderID: id, TransactionID: "t", Amount: 0, Status: "SUCCESS"}),
			sig(testSecret, now, mustJSON(t, callback{OrderID: id, TransactionID: "t", Amount: 0, Status: "SUCCESS"})), 400, "INVALID_REQUEST"},
		{"over 64 KiB", []byte(strings.Repeat(" ", 65<<10)), "t=1,v1=00", 413, "PAYLOAD_TOO_LARGE"},
	}
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			r := api.signed(tt.body, tt.signature)
			require.Equal(t, tt.status, r.status, "%s", r.body)
			require.Equal(t, tt.code, r.code(t))
		})
	}
	require.Equal(t, "PENDING_PAYMENT", api.order(id)["status"])
	require.Empty(t, s.payments(id))

	// A failed payment is acknowledged with the order's status.
	r := api.pay(callback{OrderID: id, TransactionID: s.name("tx-failed"), Amount: 4999, Status: "FAILED"})
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	require.Equal(t, pending, r.json(t))

	// The wrong amount: 422, recorded for refund, the order stays payable.
	r = api.pay(callback{OrderID: id, TransactionID: s.name("tx-short"), Amount: 1, Status: "SUCCESS"})
	require.Equal(t, http.StatusUnprocessableEntity, r.status, "%s", r.body)
	require.Equal(t, "AMOUNT_MISMATCH", r.code(t))
	require.Equal(t, "PENDING_PAYMENT", api.order(id)["status"])

	// Paid, signed with the old secret while the rotation is under way and
	// with a wrong value beside the right one.
	header := wrongHex[strings.Index(wrongHex, ",")+1:]
	goodSig := sig(testOldSecret, now, goodBody) + "," + header
	r = api.signed(goodBody, goodSig)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	paid := map[string]any{"order_id": id, "status": "PAID"}
	require.Equal(t, paid, r.json(t))

	// A replay of the very same request: the same answer, nothing twice.
	r = api.signed(goodBody, goodSig)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	require.Equal(t, paid, r.json(t))

	// A second transaction for the paid order: acknowledged, refund owed.
	r = api.pay(callback{OrderID: id, TransactionID: s.name("tx-2"), Amount: 4999, Status: "SUCCESS"})
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	require.Equal(t, map[string]any{"order_id": id, "status": "PAID", "refund": "REQUIRED"}, r.json(t))

	require.Eventually(t, func() bool { return api.order(id)["status"] == "PAID" }, 10*time.Second, 50*time.Millisecond)
	inv := api.inventory(sku)
	require.Equal(t, int64(1), inv.Sold)
	require.Equal(t, int64(0), inv.Frozen)
	byTxn := map[string]flashsale.PaymentStatus{}
	for _, p := range s.payments(id) {
		byTxn[p.TransactionID] = p.Status
	}
	require.Equal(t, map[string]flashsale.PaymentStatus{
		s.name("tx-short"): flashsale.PaymentRefundRequired,
		s.name("tx-1"):     flashsale.PaymentCaptured,
		s.name("tx-2"):     flashsale.PaymentRefundRequired,
	}, byTxn)
	require.Equal(t, "REQUIRED", api.order(id)["refund"])

	// Money for an order that never existed is recorded for refund too.
	ghost := s.name("ghost")
	for range 2 {
		r = api.pay(callback{OrderID: ghost, TransactionID: s.name("tx-ghost"), Amount: 10, Status: "SUCCESS"})
		require.Equal(t, http.StatusNotFound, r.status, "%s", r.body)
		require.Equal(t, "ORDER_NOT_FOUND", r.code(t))
	}
	require.Len(t, s.payments(ghost), 1)
}

// Payments at the edges of the deadline, with PAYMENT_TIMEOUT=2s.
func TestCallbackAtTheDeadline(t *testing.T) {
	s := newStack(t, stackOptions{paymentTimeout: 2 * time.Second})
	api := s.api

	t.Run("late and repeated", func(t *testing.T) {
		sku := s.name("late")
		api.putSKU(sku, 1, 700, 2, 1)
		id := api.mustBuy(s.name("late-o"), s.name("late-u"), sku, 1)
		require.Eventually(t, func() bool { return api.order(id)["status"] == "EXPIRED" }, 20*time.Second, 100*time.Millisecond)

		// The provider retries, sometimes in parallel: every attempt is
		// acknowledged the same way and the money is recorded once.
		cb := callback{OrderID: id, TransactionID: s.name("late-tx"), Amount: 700, Status: "SUCCESS"}
		want := map[string]any{"order_id": id, "status": "EXPIRED", "refund": "REQUIRED"}
		answers := make([]response, 4)
		var wg sync.WaitGroup
		for i := range answers {
			wg.Go(func() { answers[i] = api.pay(cb) })
		}
		wg.Wait()
		answers = append(answers, api.pay(cb))
		for _, r := range answers {
			require.Equal(t, http.StatusOK, r.status, "%s", r.body)
			require.Equal(t, want, r.json(t))
		}

		pays := s.payments(id)
		require.Len(t, pays, 1, "recorded once: %+v", pays)
		require.Equal(t, flashsale.PaymentRefundRequired, pays[0].Status)
		require.Equal(t, int64(700), pays[0].Amount)
		o := api.order(id)
		require.Equal(t, "EXPIRED", o["status"])
		require.Equal(t, "REQUIRED", o["refund"])
		require.Equal(t, inventoryOut{SKU: sku, Total: 1, Available: 1, DBAvailable: 1, BucketCount: 2}, api.inventory(sku))
	})

	t.Run("racing the deadline", func(t *testing.T) {
		sku := s.name("race")
		offsets := []time.Duration{-time.Second, -300 * time.Millisecond, -100 * time.Millisecond, -20 * time.Millisecond,
			0, 20 * time.Millisecond, 100 * time.Millisecond}
		api.putSKU(sku, int64(len(offsets)), 500, 4, 1)
		type result struct {
			id     string
			status string
			refund any
		}
		// Place every order first, then pay each at its own offset from its
		// own deadline, all in parallel.
		results := make([]result, len(offsets))
		payBy := make([]time.Time, len(offsets))
		for i := range offsets {
			r := api.buyRetrying(s.name(fmt.Sprintf("race-o%d", i)), s.name(fmt.Sprintf("race-u%d", i)), sku, 1)
			require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
			var err error
			payBy[i], err = time.Parse(time.RFC3339Nano, r.json(t)["pay_by"].(string))
			require.NoError(t, err)
			results[i].id = r.json(t)["order_id"].(string)
		}
		answers := make([]response, len(offsets))
		var wg sync.WaitGroup
		for i, off := range offsets {
			wg.Go(func() {
				time.Sleep(time.Until(payBy[i].Add(off)))
				id := results[i].id
				answers[i] = api.pay(callback{OrderID: id, TransactionID: id + "-tx", Amount: 500, Status: "SUCCESS"})
			})
		}
		wg.Wait()
		for i, r := range answers {
			if r.status == http.StatusAccepted {
				// The order was too busy to answer in 2 s (a loaded
				// box): it has the payment and settles it; its status
				// tells how.
				require.Eventually(t, func() bool {
					o := api.order(results[i].id)
					return o["status"] == "PAID" || (o["status"] == "EXPIRED" && o["refund"] == "REQUIRED")
				}, 20*time.Second, 100*time.Millisecond)
				o := api.order(results[i].id)
				results[i].status, results[i].refund = o["status"].(string), o["refund"]
				continue
			}
			require.Equal(t, http.StatusOK, r.status, "%s", r.body)
			m := r.json(t)
			results[i].status, results[i].refund = m["status"].(string), m["refund"]
		}

		// Each order ended in exactly one of two consistent states, and
		// the answer the provider got says which.
		var paid int64
		for i, res := range results {
			require.Eventually(t, func() bool {
				st := api.order(res.id)["status"]
				return st == "PAID" || st == "EXPIRED"
			}, 20*time.Second, 100*time.Millisecond)
			pays := s.payments(res.id)
			require.Len(t, pays, 1, "offset %v", offsets[i])
			switch res.status {
			case "PAID":
				paid++
				require.Nil(t, res.refund)
				require.Equal(t, "PAID", api.order(res.id)["status"])
				require.Equal(t, flashsale.PaymentCaptured, pays[0].Status)
			case "EXPIRED":
				require.Equal(t, "REQUIRED", res.refund)
				require.Equal(t, flashsale.PaymentRefundRequired, pays[0].Status)
			default:
				t.Fatalf("offset %v: answered %q", offsets[i], res.status)
			}
			t.Logf("offset %5v: %s", offsets[i], res.status)
			// The order judges a payment by when the API received it,
			// which is never before it was sent: money sent at or after
			// the deadline is late, whatever the order was doing; money
			// sent a second before it reaches the API in time, however
			// busy the order's worker is.
			if offsets[i] >= 0 {
				require.Equal(t, "EXPIRED", res.status, "offset %v", offsets[i])
			}
			if offsets[i] <= -time.Second {
				require.Equal(t, "PAID", res.status, "offset %v", offsets[i])
			}
		}
		total := int64(len(offsets))
		require.Eventually(t, func() bool {
			inv := api.inventory(sku)
			return inv == inventoryOut{SKU: sku, Total: total, Available: total - paid, DBAvailable: total - paid,
				Sold: paid, IsSoldOut: paid == total, BucketCount: 4}
		}, 10*time.Second, 100*time.Millisecond, "units of expired orders back on sale, paid ones sold: %+v", api.inventory(sku))
	})
}

// No worker can answer while the provider calls back: one payment received
// a moment before the deadline, one after. Neither is answered 5xx: each is
// handed to its order as a signal (202) and judged, once a worker is back
// (after the deadline and its grace), by when it reached the API: the first
// order is PAID, the second EXPIRED with the money recorded for refund.
func TestPaymentWhileNoWorkerCanAnswer(t *testing.T) {
	s := newStack(t, stackOptions{paymentTimeout: 6 * time.Second})
	api := s.api
	sku := s.name("busy")
	api.putSKU(sku, 2, 900, 2, 1)
	payBy := map[string]time.Time{}
	var ids []string
	for _, key := range []string{s.name("in-time"), s.name("late")} {
		r := api.buyRetrying(key, s.name("u-"+key), sku, 1)
		require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
		id := r.json(t)["order_id"].(string)
		at, err := time.Parse(time.RFC3339Nano, r.json(t)["pay_by"].(string))
		require.NoError(t, err)
		payBy[id] = at
		ids = append(ids, id)
	}
	inTime, late := ids[0], ids[1]

	s.sys.StopWorker()
	send := map[string]time.Time{inTime: payBy[inTime].Add(-1500 * time.Millisecond), late: payBy[late].Add(500 * time.Millisecond)}
	answers := map[string]response{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for id, at := range send {
		wg.Go(func() {
			time.Sleep(time.Until(at))
			r := api.pay(callback{OrderID: id, TransactionID: id + "-tx", Amount: 900, Status: "SUCCESS"})
			mu.Lock()
			answers[id] = r
			mu.Unlock()
		})
	}
	wg.Wait()
	for id, r := range answers {
		require.Equal(t, http.StatusAccepted, r.status, "%s: %s", id, r.body)
		require.Equal(t, map[string]any{"order_id": id, "transaction_id": id + "-tx", "payment": "PROCESSING"}, r.json(t))
	}

	// The worker comes back after both deadlines and their grace: the
	// orders learn of the payments only now.
	last := payBy[inTime]
	if payBy[late].After(last) {
		last = payBy[late]
	}
	time.Sleep(time.Until(last.Add(7 * time.Second)))
	s.sys.StartWorker()

	// The late money is recorded for refund after the order's
	// compensation, so its refund shows a moment after EXPIRED.
	require.Eventually(t, func() bool {
		return api.order(inTime)["status"] == "PAID" && api.order(late)["status"] == "EXPIRED" &&
			api.order(late)["refund"] == "REQUIRED"
	}, 30*time.Second, 100*time.Millisecond, "in time %v, late %v", api.order(inTime), api.order(late))
	require.Nil(t, api.order(inTime)["refund"])
	require.Equal(t, []flashsale.PaymentStatus{flashsale.PaymentCaptured}, paymentStatuses(s.payments(inTime)))
	require.Equal(t, []flashsale.PaymentStatus{flashsale.PaymentRefundRequired}, paymentStatuses(s.payments(late)))

	// The provider's retry of either now gets the settled answer at once.
	r := api.pay(callback{OrderID: inTime, TransactionID: inTime + "-tx", Amount: 900, Status: "SUCCESS"})
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	require.Equal(t, map[string]any{"order_id": inTime, "status": "PAID"}, r.json(t))
	r = api.pay(callback{OrderID: late, TransactionID: late + "-tx", Amount: 900, Status: "SUCCESS"})
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	require.Equal(t, map[string]any{"order_id": late, "status": "EXPIRED", "refund": "REQUIRED"}, r.json(t))
	require.Eventually(t, func() bool {
		return api.inventory(sku) == inventoryOut{SKU: sku, Total: 2, Available: 1, DBAvailable: 1, Sold: 1, BucketCount: 2}
	}, 10*time.Second, 100*time.Millisecond, "%+v", api.inventory(sku))
}

func paymentStatuses(pays []orderdb.Payment) []flashsale.PaymentStatus {
	out := make([]flashsale.PaymentStatus, len(pays))
	for i, p := range pays {
		out[i] = p.Status
	}
	return out
}

// A payment reached the API a second before the deadline, but Temporal
// never delivered it to the order (here: only its receipt is written, as if
// the frontend had been down for every try). At the deadline the order's
// close finds the receipt in MySQL and the order is PAID, not expired: the
// database is the final guard for money received in time. A receipt that
// came after the deadline changes nothing.
func TestPaymentReceivedButNeverDeliveredIsApplied(t *testing.T) {
	s := newStack(t, stackOptions{paymentTimeout: 3 * time.Second})
	api := s.api
	sku := s.name("lost")
	api.putSKU(sku, 2, 800, 2, 1)
	payBy := map[string]time.Time{}
	var ids []string
	for _, key := range []string{s.name("kept"), s.name("late")} {
		r := api.buyRetrying(key, s.name("u-"+key), sku, 1)
		require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
		id := r.json(t)["order_id"].(string)
		at, err := time.Parse(time.RFC3339Nano, r.json(t)["pay_by"].(string))
		require.NoError(t, err)
		payBy[id] = at
		ids = append(ids, id)
	}
	kept, late := ids[0], ids[1]
	ctx := context.Background()
	require.NoError(t, s.b.Orders.RecordReceipt(ctx, orderdb.Receipt{
		TransactionID: kept + "-tx", OrderID: kept, Amount: 800, ReceivedAt: payBy[kept].Add(-time.Second)}))
	require.NoError(t, s.b.Orders.RecordReceipt(ctx, orderdb.Receipt{
		TransactionID: late + "-tx", OrderID: late, Amount: 800, ReceivedAt: payBy[late].Add(time.Second)}))

	require.Eventually(t, func() bool {
		return api.order(kept)["status"] == "PAID" && api.order(late)["status"] == "EXPIRED"
	}, 30*time.Second, 100*time.Millisecond, "kept %v, late %v", api.order(kept), api.order(late))
	require.Equal(t, []flashsale.PaymentStatus{flashsale.PaymentCaptured}, paymentStatuses(s.payments(kept)))
	require.Empty(t, s.payments(late), "a late receipt is not a payment: the provider's callback, when it comes, is answered as late money")
	require.Eventually(t, func() bool {
		return api.inventory(sku) == inventoryOut{SKU: sku, Total: 2, Available: 1, DBAvailable: 1, Sold: 1, BucketCount: 2}
	}, 10*time.Second, 100*time.Millisecond, "%+v", api.inventory(sku))

	// The provider's callback for the kept payment, when it finally gets
	// through: the same transaction, acknowledged as PAID, nothing twice.
	r := api.pay(callback{OrderID: kept, TransactionID: kept + "-tx", Amount: 800, Status: "SUCCESS"})
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	require.Equal(t, map[string]any{"order_id": kept, "status": "PAID"}, r.json(t))
	require.Len(t, s.payments(kept), 1)
}
