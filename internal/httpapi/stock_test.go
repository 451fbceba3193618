//go:build integration

package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"
)

// stockReads counts the reads GET /api/v1/inventory/{sku} makes of one SKU
// where they happen: MySQL queries of its inventory row (a GORM callback)
// and Redis MGETs of its keys (a go-redis hook).
type stockReads struct {
	sku          string
	mysql, redis atomic.Int64
}

func countStockReads(t *testing.T, s *stack, sku string) *stockReads {
	t.Helper()
	c := &stockReads{sku: sku}
	name := "test:count-stock-reads-" + s.id
	require.NoError(t, s.b.Orders.DB().Callback().Query().After("gorm:query").Register(name, func(db *gorm.DB) {
		if db.Statement.Table == "inventory" && slices.Contains(db.Statement.Vars, any(sku)) {
			c.mysql.Add(1)
		}
	}))
	t.Cleanup(func() { _ = s.b.Orders.DB().Callback().Query().Remove(name) })
	s.b.Redis.AddHook(c)
	return c
}

func (c *stockReads) DialHook(next redis.DialHook) redis.DialHook { return next }
func (c *stockReads) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
func (c *stockReads) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if cmd.Name() == "mget" && slices.ContainsFunc(cmd.Args(), func(a any) bool {
			k, ok := a.(string)
			return ok && k == "fs:{sku:"+c.sku+"}:buckets"
		}) {
			c.redis.Add(1)
		}
		return next(ctx, cmd)
	}
}

func (c *stockReads) reads() (mysql, redis int64) { return c.mysql.Load(), c.redis.Load() }

// publicStock is GET /api/v1/inventory/{sku} without a token, as anybody.
func (in *instance) publicStock(sku string) (response, inventoryOut) {
	in.t.Helper()
	r := in.call(http.MethodGet, "/api/v1/inventory/"+sku, nil, nil)
	var out inventoryOut
	if r.status == http.StatusOK {
		require.NoError(in.t, json.Unmarshal(r.body, &out))
	}
	return r, out
}

// TestPublicStockIsCached is issue 21's defect 8: GET
// /api/v1/inventory/{sku} is public, so a flood of it within a second costs
// MySQL and Redis one read of the SKU, not one per request (on 73799bf,
// 200 requests were 200 reads of the hot row); the answer follows a stock
// change within a second, and the admin token reads fresh. Made-up SKU
// names are answered 404 and cannot keep the real SKU's answer out of the
// cache.
func TestPublicStockIsCached(t *testing.T) {
	s := newStack(t, stackOptions{})
	api := s.api
	sku := s.name("sku")
	api.putSKU(sku, 10, 100, 2, 1)
	reads := countStockReads(t, s, sku)

	const callers = 200
	flood := func() []response {
		answers := make([]response, callers)
		var wg sync.WaitGroup
		for i := range callers {
			wg.Go(func() { answers[i], _ = api.publicStock(sku) })
		}
		wg.Wait()
		return answers
	}
	start := time.Now()
	answers := flood()
	took := time.Since(start)
	require.Less(t, took, time.Second, "the flood must fit in the cache's second")
	mysql, rd := reads.reads()
	t.Logf("%d GETs in %v: %d MySQL and %d Redis reads", callers, took.Round(time.Millisecond), mysql, rd)
	require.Equal(t, int64(1), mysql, "MySQL reads for %d GETs", callers)
	require.Equal(t, int64(1), rd, "Redis reads for %d GETs", callers)
	for _, r := range answers {
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		require.JSONEq(t, string(answers[0].body), string(r.body), "one snapshot for all")
		require.Equal(t, "public, max-age=1", r.header.Get("Cache-Control"))
	}

	// A stock change: an operator sees it at once, anybody within a second.
	r := api.call(http.MethodPost, "/api/v1/admin/skus/"+sku+"/restock",
		mustJSON(t, map[string]any{"quantity": 5, "restock_id": s.name("r1")}), adminHeader())
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	require.Equal(t, int64(15), api.inventory(sku).Total, "the admin token reads fresh")
	time.Sleep(1100 * time.Millisecond)
	_, out := api.publicStock(sku)
	require.Equal(t, int64(15), out.Total)
	require.Equal(t, int64(15), out.Available)

	// Made-up names: 404 each, and the real SKU is still cached after them.
	for i := range 300 {
		r, _ := api.publicStock(s.name(fmt.Sprintf("madeup-%d", i)))
		require.Equal(t, http.StatusNotFound, r.status, "%s", r.body)
		require.Equal(t, "UNKNOWN_SKU", r.code(t))
	}
	time.Sleep(1100 * time.Millisecond)
	mysql, rd = reads.reads()
	for _, r := range flood() {
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	}
	m2, r2 := reads.reads()
	require.Equal(t, int64(1), m2-mysql, "MySQL reads for %d GETs after the made-up names", callers)
	require.Equal(t, int64(1), r2-rd, "Redis reads for %d GETs after the made-up names", callers)
	// What starter check runs: no invariant broken by anything above.
	s.checkClean(sku)
}
