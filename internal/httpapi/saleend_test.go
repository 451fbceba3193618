//go:build integration

package httpapi_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flashsale/flashsale/internal/sale"
)

// Tests of a sale's end: closes_at, the closes_at action that moves it,
// and the close of a SKU sold without a queue.

// moveEnd sends the closes_at action.
func (in *instance) moveEnd(sku string, to time.Time) response {
	in.t.Helper()
	return in.call(http.MethodPost, "/api/v1/admin/skus/"+sku+"/sale/closes_at",
		mustJSON(in.t, map[string]any{"closes_at": to, "reason": "test"}), adminHeader())
}

// redisPast waits until Redis's clock, the one the spend script judges
// closes_at by, is past at.
func (s *stack) redisPast(at time.Time) {
	s.t.Helper()
	require.Eventually(s.t, func() bool {
		now, err := s.b.Redis.Time(s.t.Context()).Result()
		return err == nil && now.After(at)
	}, 30*time.Second, 20*time.Millisecond)
}

// No instance answers 201 after closes_at: two API instances over the
// same Redis and MySQL sell to pass holders until the end, which the
// closes_at action first extends, then shortens to a moment from now;
// from it on every buy of the pass holders left, on either instance, is
// 409 SALE_CLOSED. The workflow's timer then closes the sale and ends it:
// reported, no key left, starter check clean.
func TestNo201AfterClosesAtOnTwoInstances(t *testing.T) {
	s := newStack(t, stackOptions{paymentTimeout: 3 * time.Second})
	apis := []*instance{s.api, s.secondInstance()}
	sku := s.name("closes")
	const units, price, buyers = 10, 100, 8
	apis[0].putSKU(sku, units, price, 2, 1)
	opensAt := time.Now().Add(time.Hour)
	r := apis[0].call(http.MethodPost, "/api/v1/admin/skus/"+sku+"/sale",
		mustJSON(t, map[string]any{"opens_at": opensAt, "closes_at": opensAt.Add(time.Hour)}), adminHeader())
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	t.Cleanup(func() { _ = s.b.Temporal.TerminateWorkflow(t.Context(), "sale-"+sku, "", "test over") })
	require.NotEmpty(t, r.json(t)["closes_at"])

	require.Equal(t, "INVALID_REQUEST", apis[1].moveEnd(sku, opensAt.Add(-time.Minute)).code(t), "before opens_at")
	later := opensAt.Add(2 * time.Hour).UTC().Truncate(time.Millisecond)
	ext := apis[1].moveEnd(sku, later)
	require.Equal(t, http.StatusOK, ext.status, "%s", ext.body)
	require.Equal(t, later.Format(time.RFC3339Nano), ext.json(t)["closes_at"], "extended")

	var users []string
	for i := range buyers {
		users = append(users, s.name(fmt.Sprintf("c%d", i)))
		require.Equal(t, http.StatusCreated, apis[i%2].enter(sku, users[i]).status)
	}
	require.Equal(t, http.StatusOK, apis[0].control(sku, "open").status)
	passes := map[string]string{}
	for i, u := range users {
		passes[u] = apis[i%2].waitPass(sku, u)
	}
	var ids []string
	for i, u := range users[:buyers/2] {
		b := apis[i%2].buyWithPass("k", u, sku, passes[u])
		require.Equal(t, http.StatusCreated, b.status, "%s", b.body)
		ids = append(ids, b.json(t)["order_id"].(string))
	}
	for _, id := range ids[:2] {
		require.Equal(t, http.StatusOK, apis[0].pay(callback{OrderID: id, TransactionID: id + "-t", Amount: price, Status: "SUCCESS"}).status)
	}

	end := time.Now().Add(time.Second)
	short := apis[0].moveEnd(sku, end)
	require.Equal(t, http.StatusOK, short.status, "%s", short.body)
	s.redisPast(end)
	for i, u := range users[buyers/2:] {
		for _, api := range apis {
			b := api.buyWithPass(fmt.Sprintf("k%d", i), u, sku, passes[u])
			require.Equal(t, http.StatusConflict, b.status, "%s", b.body)
			require.Equal(t, "SALE_CLOSED", b.code(t))
		}
	}

	v := s.saleResult(sku, 2*time.Minute)
	require.Equal(t, sale.Closed, v.State)
	require.True(t, end.Equal(v.ClosesAt), "the shortened end: %s, %s", end, v.ClosesAt)
	require.False(t, v.ClosedAt.Before(v.ClosesAt), "closed by the timer at closes_at")
	require.NotNil(t, v.Report)
	require.EqualValues(t, 2, v.Report.UnitsSold)
	require.EqualValues(t, 2*price, v.Report.Revenue)
	require.EqualValues(t, units-2, v.Report.Available)
	require.Empty(t, s.redisKeys(sku))
	s.checkClean(sku)
	require.Equal(t, "SALE_CLOSED", apis[1].moveEnd(sku, time.Now().Add(time.Hour)).code(t), "an ended sale's end moves no more")
}

// A SKU sold without a queue closes as a sale does: from the close on
// every buy on either instance is 409 SALE_CLOSED; once its orders have
// settled (two paid, one left to expire) it is reported, marked ended, no
// Redis key of it is left, and starter check is clean.
func TestUnqueuedSKUCloseLeavesNoKeyAndAReport(t *testing.T) {
	s := newStack(t, stackOptions{paymentTimeout: 3 * time.Second})
	apis := []*instance{s.api, s.secondInstance()}
	sku := s.name("unq")
	const units, price = 5, 250
	apis[0].putSKU(sku, units, price, 2, 2)
	var ids []string
	for i := range 3 {
		ids = append(ids, apis[i%2].mustBuy("k", s.name(fmt.Sprintf("u%d", i)), sku, 1))
	}
	for _, id := range ids[:2] {
		require.Equal(t, http.StatusOK, apis[1].pay(callback{OrderID: id, TransactionID: id + "-t", Amount: price, Status: "SUCCESS"}).status)
	}

	closed := apis[0].call(http.MethodPost, "/api/v1/admin/skus/"+sku+"/close", nil, adminHeader())
	require.Equal(t, http.StatusOK, closed.status, "%s", closed.body)
	t.Cleanup(func() { _ = s.b.Temporal.TerminateWorkflow(t.Context(), "sale-"+sku, "", "test over") })
	cv := closed.json(t)
	require.Equal(t, "CLOSED", cv["state"])
	require.Equal(t, true, cv["unqueued"])
	for _, api := range apis {
		for _, qty := range []int64{1, 2} {
			b := api.buy("late", s.name("late"), sku, qty)
			require.Equal(t, http.StatusConflict, b.status, "%s", b.body)
			require.Equal(t, "SALE_CLOSED", b.code(t))
		}
	}
	again := apis[1].call(http.MethodPost, "/api/v1/admin/skus/"+sku+"/close", nil, adminHeader())
	require.Equal(t, "SALE_STATE_CONFLICT", again.code(t), "one close at a time")

	v := s.saleResult(sku, 2*time.Minute)
	require.Equal(t, sale.Closed, v.State)
	require.True(t, v.Unqueued)
	r := v.Report
	require.NotNil(t, r)
	require.EqualValues(t, 2, r.UnitsSold)
	require.EqualValues(t, 2*price, r.Revenue)
	require.EqualValues(t, map[string]int64{"PAID": 2, "EXPIRED": 1}, map[string]int64{"PAID": r.Orders["PAID"], "EXPIRED": r.Orders["EXPIRED"]})
	require.EqualValues(t, units-2, r.Available)
	require.Empty(t, s.redisKeys(sku), "no key of the SKU is left in Redis")
	require.NotNil(t, s.dbInventory(sku).SaleEndedAt)
	s.checkClean(sku)
	for _, api := range apis {
		require.NotEqual(t, http.StatusCreated, api.buy("after", s.name("after"), sku, 1).status, "nothing sold after the end")
	}
	require.Equal(t, "SALE_STATE_CONFLICT", apis[0].call(http.MethodPost, "/api/v1/admin/skus/"+sku+"/close", nil, adminHeader()).code(t),
		"ended: preheat to sell again")
}
