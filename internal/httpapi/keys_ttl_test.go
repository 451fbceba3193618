//go:build integration

package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/flashsale/flashsale/internal/inventory"
	"github.com/flashsale/flashsale/workflows"
)

// keyRule is what a Redis key of a sale may carry as its TTL: none, for
// what the sale needs until it ends or the SKU is redefined (removed then
// explicitly), or one that outlives the key's use.
type keyRule struct {
	pattern *regexp.Regexp // on the key after "fs:{sku:<sku>"
	why     string
	// ok judges the TTL (-1: none) and the value.
	ok func(ttl time.Duration, value string) bool
}

// heldLife is the least a record of a sale's orders must have left right
// after it was written (inventory.DefaultHeldTTL, the longest payment window
// plus a day, less the test's own time):
// markers of taken units, the buyer's limit count and the order's claim
// on it, the waitlist, offers, and the idempotency records of restocks and
// corrections.
const heldLife = inventory.DefaultHeldTTL - time.Hour

var (
	none     = func(ttl time.Duration, _ string) bool { return ttl == -1 }
	held     = func(ttl time.Duration, _ string) bool { return ttl >= heldLife }
	keyRules = []keyRule{
		{regexp.MustCompile(`^\}:(buckets|gen|layouts|layout:epoch|limit|queued|reconcile:fence|drift|bookings)$`),
			"the SKU's stock, layout and definition, its fence and drift count: needed for the whole sale", none},
		{regexp.MustCompile(`^:b\d+\}:(stock|layout)$`), "a bucket's units and layout stamp: the whole sale", none},
		{regexp.MustCompile(`^:b\d+\}:order:.+$`), "an order's marker: a sale day (held or given back); a probe that found nothing: its reserve step",
			func(ttl time.Duration, v string) bool {
				if v == "0" {
					return ttl >= time.Minute
				}
				return ttl >= heldLife
			}},
		{regexp.MustCompile(`^\}:(held|claim|booking):.+$`), "the buyer's limit count, the order's claim on it, its booking", held},
		{regexp.MustCompile(`^\}:(waitlist|waitlist:users|waitlist:ranked|waitlist:offers|offer:.+|placed)$`), "the waitlist, its offers, the placed orders", held},
		{regexp.MustCompile(`^\}:offer:.+$`), "who got a released order's units", held},
		{regexp.MustCompile(`^:b\d+\}:(restock|adjust|movein|moveout):.+$`), "idempotency of a restock, correction or move", held},
		{regexp.MustCompile(`^\}:(reconcile:claim|drift):.+$`), "idempotency of a correction's claim or a refusal's count", held},
		{regexp.MustCompile(`^\}:soldout$`), "a hint that must heal by itself",
			func(ttl time.Duration, _ string) bool { return ttl > 0 && ttl <= inventory.DefaultSoldOutTTL }},
		{regexp.MustCompile(`^\}:traffic(:\d+)?$`), "the live page's counts: shown, never sold from",
			func(ttl time.Duration, _ string) bool { return ttl > 0 }},
	}
)

// TestSaleKeysOutliveTheirUse runs a sale step on the real stack (buys,
// one paid, one cancelled and offered to a waiting buyer, one unpaid, a
// restock, a reconcile correction) and checks every Redis key of the SKU
// against the rule for its kind: none expires while the sale needs it,
// and a key of a kind no rule names fails the test (a new key needs one).
func TestSaleKeysOutliveTheirUse(t *testing.T) {
	ctx := context.Background()
	s := newStack(t, stackOptions{buyRate: 1000})
	api := s.api
	sku := s.name("ttl")
	api.putSKU(sku, 3, 100, 2, 1)
	var ids []string
	for _, u := range []string{"a", "b", "c"} {
		ids = append(ids, api.mustBuy(s.name("k-"+u), s.name(u), sku, 1))
	}
	r := api.pay(callback{OrderID: ids[0], TransactionID: ids[0] + "-tx", Amount: 100, Status: "SUCCESS"})
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	r = api.call(http.MethodPost, "/api/v1/skus/"+sku+"/waitlist", mustJSON(t, map[string]any{"user_id": s.name("e")}), buyerHeader(t, s.name("e")))
	require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
	require.Equal(t, http.StatusOK, api.cancel(s.name("b"), ids[1]).status)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		r := api.call(http.MethodGet, "/api/v1/skus/"+sku+"/waitlist/me", nil, buyerHeader(t, s.name("e")))
		require.Contains(c, string(r.body), "offer_order_id")
	}, 20*time.Second, 100*time.Millisecond, "the released unit is offered to the waiting buyer")
	r = api.call(http.MethodPost, "/api/v1/admin/skus/"+sku+"/restock", []byte(`{"quantity":2,"restock_id":"r1"}`), adminHeader())
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	require.NoError(t, s.b.Redis.IncrBy(ctx, "fs:{sku:"+sku+":b1}:stock", 1).Err())
	run, err := s.b.Temporal.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "reconcile-" + sku, TaskQueue: s.cfg.TaskQueue},
		workflows.ReconcileWorkflow, workflows.ReconcileInput{SKUs: []string{sku}, Settle: 500 * time.Millisecond})
	require.NoError(t, err)
	var res workflows.ReconcileResult
	require.NoError(t, run.Get(ctx, &res))
	require.Equal(t, workflows.ActionCorrected, res.SKUs[0].Action)

	// A SKU that deducts at payment: one buyer books, another books and pays.
	later := s.name("paylater")
	r = api.call(http.MethodPut, "/api/v1/admin/skus/"+later, mustJSON(t, map[string]any{
		"total": 2, "price": 100, "buckets": 2, "per_user_limit": 1, "deduct": "payment",
	}), adminHeader())
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	api.mustBuy(s.name("k-f"), s.name("f"), later, 1)
	paidLater := api.mustBuy(s.name("k-g"), s.name("g"), later, 1)
	r = api.pay(callback{OrderID: paidLater, TransactionID: paidLater + "-tx", Amount: 100, Status: "SUCCESS"})
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)

	kinds := map[string]int{}
	for _, sku := range []string{sku, later} {
		kinds = checkKeyTTLs(t, s, "fs:{sku:"+sku, kinds)
	}
	for _, id := range ids {
		ttl, err := s.b.Redis.PTTL(ctx, "fs:placed:"+id).Result()
		require.NoError(t, err)
		assert.GreaterOrEqual(t, ttl, heldLife, "fs:placed:%s", id)
	}
	t.Logf("key kinds seen: %s", fmt.Sprint(kinds))
	require.GreaterOrEqual(t, len(kinds), 7, "the sale step wrote keys of every main kind")
}

// checkKeyTTLs checks every key under prefix against keyRules, counting the
// kinds it saw into kinds.
func checkKeyTTLs(t *testing.T, s *stack, prefix string, kinds map[string]int) map[string]int {
	t.Helper()
	ctx := context.Background()
	iter := s.b.Redis.Scan(ctx, 0, prefix+"*", 1000).Iterator()
	for iter.Next(ctx) {
		key := iter.Val()
		ttl, err := s.b.Redis.PTTL(ctx, key).Result()
		require.NoError(t, err)
		value, _ := s.b.Redis.Get(ctx, key).Result() // "" for a list, set or hash
		rest := strings.TrimPrefix(key, prefix)
		matched := false
		for _, rule := range keyRules {
			if !rule.pattern.MatchString(rest) {
				continue
			}
			matched = true
			kinds[rule.pattern.String()]++
			assert.True(t, rule.ok(ttl, value), "%s (%s): TTL %v breaks its rule: %s", key, value, ttl, rule.why)
			break
		}
		assert.True(t, matched, "%s (TTL %v): no rule names this kind of key; add one", key, ttl)
	}
	require.NoError(t, iter.Err())
	return kinds
}
