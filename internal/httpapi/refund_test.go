//go:build integration

package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/internal/audit"
	"github.com/flashsale/flashsale/internal/orderdb"
)

// TestRefundOneOrderExactlyOnce refunds two paid orders through the admin
// API, one with restock and one without, each asked 5 times at once: the
// money and the units move once, every answer is the first refund's
// result, a later ask with the other restock answers it too, and the
// checker balances units and money. The money owed back is then marked
// sent back (twice: the same answer).
func TestRefundOneOrderExactlyOnce(t *testing.T) {
	ctx := context.Background()
	s := newStack(t, stackOptions{})
	api := s.api
	sku := s.name("refund")
	api.putSKU(sku, 10, 500, 2, 5)
	paid := func(name string) string {
		id := api.mustBuy(s.name(name), s.name("u-"+name), sku, 1)
		r := api.pay(callback{OrderID: id, TransactionID: id + "-tx", Amount: 500, Status: "SUCCESS"})
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		require.Equal(t, "PAID", r.json(t)["status"], "%s", r.body)
		return id
	}
	back, kept, still, late := paid("back"), paid("kept"), paid("still"), paid("late")
	type answer struct {
		OrderID   string `json:"order_id"`
		Status    string `json:"status"`
		Amount    int64  `json:"amount"`
		Refunded  bool   `json:"refunded"`
		Restocked bool   `json:"restocked"`
		OnSale    bool   `json:"on_sale"`
	}
	refund := func(id string, restock bool) answer {
		r := api.call(http.MethodPost, "/api/v1/admin/orders/"+id+"/refund",
			mustJSON(t, map[string]any{"restock": restock, "reason": "returned"}), adminHeader())
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		var a answer
		require.NoError(t, json.Unmarshal(r.body, &a))
		return a
	}
	fiveAtOnce := func(id string, restock bool) []answer {
		out := make([]answer, 5)
		var wg sync.WaitGroup
		for i := range out {
			wg.Go(func() { out[i] = refund(id, restock) })
		}
		wg.Wait()
		return out
	}
	check := func(answers []answer, want answer) {
		t.Helper()
		firsts := 0
		for _, a := range answers {
			if a.Refunded {
				firsts++
			}
			a.Refunded = false
			require.Equal(t, want, a)
		}
		require.Equal(t, 1, firsts, "exactly one call refunded the order")
	}
	check(fiveAtOnce(back, true), answer{OrderID: back, Status: "CANCELLED", Amount: 500, Restocked: true, OnSale: true})
	check(fiveAtOnce(kept, false), answer{OrderID: kept, Status: "CANCELLED", Amount: 500})
	// A refund after the order's Redis markers expired (a sale day after
	// the take) still puts its unit back on sale, once.
	keys, err := s.b.Redis.Keys(ctx, "fs:{sku:"+sku+":b*}:order:"+late).Result()
	require.NoError(t, err)
	require.NotEmpty(t, keys)
	require.NoError(t, s.b.Redis.Del(ctx, keys...).Err())
	check(fiveAtOnce(late, true), answer{OrderID: late, Status: "CANCELLED", Amount: 500, Restocked: true, OnSale: true})
	// A retry asking the other way answers the first refund.
	require.Equal(t, answer{OrderID: back, Status: "CANCELLED", Amount: 500, Restocked: true, OnSale: true}, refund(back, false))

	inv, err := s.b.Orders.Inventory(ctx, sku)
	require.NoError(t, err)
	require.Equal(t, [4]int64{9, 8, 0, 1}, [4]int64{inv.Total, inv.Available, inv.Frozen, inv.Sold},
		"two units back on sale, one written off, one still sold")
	snap, err := s.b.Stock.Snapshot(ctx, sku)
	require.NoError(t, err)
	require.Equal(t, int64(8), snap.Units, "the restocked units are back in Redis, once each")
	var entries int64
	require.NoError(t, s.b.Orders.DB().Raw(`SELECT COUNT(*) FROM inventory_journal WHERE type = 'REFUND' AND ref_id IN (?, ?, ?)`,
		back, kept, late).Scan(&entries).Error)
	require.Equal(t, int64(3), entries)
	for _, id := range []string{back, kept, late} {
		pays, err := s.b.Orders.Payments(ctx, id)
		require.NoError(t, err)
		require.Len(t, pays, 1)
		require.Equal(t, flashsale.PaymentRefundRequired, pays[0].Status)
	}

	rep, err := audit.Check(ctx, s.sys.AuditDeps(), sku)
	require.NoError(t, err)
	require.True(t, rep.OK, "%+v", rep.Violations)
	require.Equal(t, orderdb.Money{Captured: 500, Owed: 1500, PaidOrders: 500}, rep.Money)

	// The provider sent the money back: marked once, the same answer twice.
	for range 2 {
		r := api.call(http.MethodPost, "/api/v1/admin/payments/"+back+"-tx/refunded",
			[]byte(`{"refund_id":"re-1"}`), adminHeader())
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		require.Equal(t, map[string]any{"transaction_id": back + "-tx", "order_id": back, "amount": 500.0, "status": "REFUNDED"}, r.json(t))
	}
	r := api.call(http.MethodPost, "/api/v1/admin/payments/"+still+"-tx/refunded", nil, adminHeader())
	require.Equal(t, http.StatusConflict, r.status, "%s", r.body)
	require.Equal(t, "ORDER_CLOSED", r.code(t))
	rep, err = audit.Check(ctx, s.sys.AuditDeps(), sku)
	require.NoError(t, err)
	require.True(t, rep.OK, "%+v", rep.Violations)
	require.Equal(t, orderdb.Money{Captured: 500, Owed: 1000, Refunded: 500, PaidOrders: 500}, rep.Money)

	// Not paid: refused.
	open := api.mustBuy(s.name("open"), s.name("u-open"), sku, 1)
	r = api.call(http.MethodPost, "/api/v1/admin/orders/"+open+"/refund", []byte(`{"restock":true}`), adminHeader())
	require.Equal(t, http.StatusBadRequest, r.status, "%s", r.body)
	r = api.call(http.MethodPost, "/api/v1/admin/orders/"+s.name("nope")+"/refund", []byte(`{"restock":true}`), adminHeader())
	require.Equal(t, http.StatusNotFound, r.status, "%s", r.body)
	r = api.call(http.MethodPost, "/api/v1/admin/orders/"+back+"/refund", []byte(`{}`), adminHeader())
	require.Equal(t, http.StatusBadRequest, r.status, "%s", r.body)
}
