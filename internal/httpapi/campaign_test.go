//go:build integration

package httpapi_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flashsale/flashsale/internal/sale"
	"github.com/flashsale/flashsale/workflows"
)

// A campaign of 5 SKUs at flash prices on the real stack: each item's
// allocation is carved from its SKU's stock, every item's sale opens at
// the campaign's opens_at, buyers of item i buy i units (one each, with
// their pass) and pay the flash price, the campaign's close closes every
// sale together, and once they have ended each SKU gets back what was left
// of its allocation: its regular stock is its own minus what the campaign
// sold. The report is per item and in total, no key of a campaign SKU is
// left, and starter check is clean on every SKU.
func TestCampaignOfFiveSKUs(t *testing.T) {
	s := newStack(t, stackOptions{paymentTimeout: 5 * time.Second})
	api := s.api
	const n, stock, price, alloc = 5, 10, 1000, 4
	id := s.id[:8]
	var items []map[string]any
	var skus []string
	for i := range n {
		sku := s.name(fmt.Sprintf("cp%d", i))
		skus = append(skus, sku)
		api.putSKU(sku, stock, price, 2, 1)
		items = append(items, map[string]any{"sku_id": sku, "flash_price": 500 + i, "allocation": alloc, "per_user_limit": 1})
	}
	opensAt := time.Now().Add(3 * time.Second).UTC()
	r := api.call(http.MethodPost, "/api/v1/admin/campaigns/"+id, mustJSON(t, map[string]any{
		"opens_at": opensAt, "closes_at": opensAt.Add(time.Hour), "items": items}), adminHeader())
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	t.Cleanup(func() {
		_ = s.b.Temporal.TerminateWorkflow(t.Context(), workflows.CampaignWorkflowID(id), "", "test over")
	})
	view := r.json(t)
	require.Equal(t, "PREQUEUE", view["state"])
	var children []string
	for i, it := range view["items"].([]any) {
		child := it.(map[string]any)["campaign_sku_id"].(string)
		children = append(children, child)
		t.Cleanup(func() {
			_ = s.b.Temporal.TerminateWorkflow(t.Context(), workflows.SaleWorkflowID(child), "", "test over")
		})
		inv := s.dbInventory(child)
		require.EqualValues(t, alloc, inv.Total, "the allocation, carved")
		require.EqualValues(t, 500+i, inv.Price, "at the flash price")
		require.EqualValues(t, stock-alloc, s.dbInventory(skus[i]).Available, "carved from the SKU")
		require.EqualValues(t, stock-alloc, api.inventory(skus[i]).Available, "and from its Redis")
	}
	require.Equal(t, "SALE_NOT_OPEN", api.buy("early", s.name("early"), children[0], 1).code(t), "nothing before opens_at")

	// Buyers of item i enter its queue before the open.
	buyers := map[int][]string{}
	for i, child := range children {
		for j := range i {
			u := s.name(fmt.Sprintf("b%d-%d", i, j))
			buyers[i] = append(buyers[i], u)
			require.Equal(t, http.StatusCreated, api.enter(child, u).status)
		}
	}
	var opened []time.Time
	for _, child := range children {
		require.Eventually(t, func() bool {
			v := api.call(http.MethodGet, "/api/v1/admin/skus/"+child+"/sale", nil, adminHeader())
			return v.status == http.StatusOK && v.json(t)["state"] == "OPEN"
		}, 60*time.Second, 100*time.Millisecond, "%s opens", child)
		v := api.call(http.MethodGet, "/api/v1/admin/skus/"+child+"/sale", nil, adminHeader()).json(t)
		at, err := time.Parse(time.RFC3339Nano, v["opened_at"].(string))
		require.NoError(t, err)
		require.False(t, at.Before(opensAt), "%s opened at opens_at, not before", child)
		opened = append(opened, at)
	}
	t.Logf("opened at opens_at + %v", func() (out []time.Duration) {
		for _, at := range opened {
			out = append(out, at.Sub(opensAt).Round(time.Millisecond))
		}
		return out
	}())

	// Paused and resumed together.
	for _, step := range []struct{ action, want string }{{"pause", "PAUSED"}, {"resume", "OPEN"}} {
		c := api.call(http.MethodPost, "/api/v1/admin/campaigns/"+id+"/"+step.action, nil, adminHeader())
		require.Equal(t, http.StatusOK, c.status, "%s", c.body)
		require.Equal(t, step.want, c.json(t)["state"])
		for _, child := range children {
			v := api.call(http.MethodGet, "/api/v1/admin/skus/"+child+"/sale", nil, adminHeader()).json(t)
			require.Equal(t, step.want, v["state"], "%s %s with the campaign", child, step.action)
		}
	}
	require.Equal(t, "SALE_STATE_CONFLICT", api.call(http.MethodPost, "/api/v1/admin/campaigns/"+id+"/resume", nil, adminHeader()).code(t))

	sold := make([]int64, n)
	for i, child := range children {
		for _, u := range buyers[i] {
			b := api.buyWithPass("k", u, child, api.waitPass(child, u))
			require.Equal(t, http.StatusCreated, b.status, "%s", b.body)
			oid := b.json(t)["order_id"].(string)
			require.EqualValues(t, 500+i, api.order(oid)["amount"], "charged the flash price")
			require.Equal(t, http.StatusOK, api.pay(callback{OrderID: oid, TransactionID: oid + "-t", Amount: int64(500 + i), Status: "SUCCESS"}).status)
			sold[i]++
		}
	}

	closed := api.call(http.MethodPost, "/api/v1/admin/campaigns/"+id+"/close", []byte(`{"reason":"test"}`), adminHeader())
	require.Equal(t, http.StatusOK, closed.status, "%s", closed.body)
	require.Equal(t, "CLOSED", closed.json(t)["state"])
	for _, child := range children {
		require.Equal(t, "SALE_CLOSED", api.enter(child, s.name("late")).code(t), "every sale closed together")
	}

	var v workflows.CampaignView
	require.NoError(t, s.b.Temporal.GetWorkflow(t.Context(), workflows.CampaignWorkflowID(id), "").Get(t.Context(), &v))
	require.True(t, v.Ended)
	require.Equal(t, sale.Closed, v.State)
	var units, revenue int64
	for i, it := range v.Items {
		require.NotNil(t, it.Report, it.CampaignSKU)
		require.EqualValues(t, sold[i], it.Report.UnitsSold, it.CampaignSKU)
		require.EqualValues(t, sold[i]*int64(500+i), it.Report.Revenue, it.CampaignSKU)
		require.EqualValues(t, alloc-sold[i], it.Returned, "what was left went back")
		units, revenue = units+sold[i], revenue+sold[i]*int64(500+i)
		inv := s.dbInventory(skus[i])
		require.EqualValues(t, stock-sold[i], inv.Total, "%s: its own stock minus what the campaign sold", skus[i])
		require.EqualValues(t, stock-sold[i], inv.Available)
		require.EqualValues(t, stock-sold[i], api.inventory(skus[i]).Available)
		child := s.dbInventory(it.CampaignSKU)
		require.EqualValues(t, sold[i], child.Total)
		require.EqualValues(t, sold[i], child.Sold)
		require.Zero(t, child.Available)
		require.Empty(t, s.redisKeys(it.CampaignSKU))
	}
	require.Equal(t, workflows.CampaignTotal{UnitsSold: units, Revenue: revenue, Returned: n*alloc - units}, v.Total)
	s.checkClean(append(skus, children...)...)
}

// The campaign door's refusals say what a campaign takes: an id of a SKU
// id's alphabet (the generic id's : @ . are refused, and the message does
// not offer them), and one unit per buyer (a per_user_limit above 1 would
// never apply, so it is refused rather than ignored). Nothing is started.
func TestCampaignDoorRefusals(t *testing.T) {
	s := newStack(t, stackOptions{})
	api := s.api
	sku := s.name("cpr")
	api.putSKU(sku, 10, 1000, 2, 1)
	opensAt := time.Now().Add(time.Hour).UTC()
	body := func(limit int) []byte {
		return mustJSON(t, map[string]any{"opens_at": opensAt, "closes_at": opensAt.Add(time.Hour),
			"items": []map[string]any{{"sku_id": sku, "flash_price": 500, "allocation": 4, "per_user_limit": limit}}})
	}
	for _, id := range []string{"x:mas", "x@mas", "x.mas"} {
		for _, r := range []response{
			api.call(http.MethodPost, "/api/v1/admin/campaigns/"+id, body(1), adminHeader()),
			api.call(http.MethodGet, "/api/v1/admin/campaigns/"+id, nil, adminHeader()),
		} {
			require.Equal(t, http.StatusBadRequest, r.status, "%s", r.body)
			require.Equal(t, map[string]any{"code": "INVALID_REQUEST",
				"message": "campaign_id must be 1-16 characters of A-Z a-z 0-9 _ -"}, r.json(t), id)
		}
	}
	id := s.id[:8]
	r := api.call(http.MethodPost, "/api/v1/admin/campaigns/"+id, body(2), adminHeader())
	require.Equal(t, http.StatusBadRequest, r.status, "%s", r.body)
	require.Equal(t, map[string]any{"code": "INVALID_REQUEST", "message": "item " + sku +
		": per_user_limit 2: a campaign item sells one unit per buyer (one pass, one unit); leave it out or give 1"}, r.json(t))
	require.Equal(t, "NO_SALE", api.call(http.MethodGet, "/api/v1/admin/campaigns/"+id, nil, adminHeader()).code(t), "nothing started")
	require.EqualValues(t, 10, s.dbInventory(sku).Available, "nothing carved")
}
