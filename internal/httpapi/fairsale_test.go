//go:build integration

package httpapi_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flashsale/flashsale/internal/httpapi"
	"github.com/flashsale/flashsale/internal/sale"
)

// Tests of issue 23's fair sale (docs/design/fair-sale.md) on the real
// stack: a SaleWorkflow on the stack's worker, its queue in Redis, passes
// through the API.

// startSale starts a fair sale of sku opening at opensAt.
func (s *stack) startSale(sku string, opensAt time.Time, passTTL int) map[string]any {
	in := s.api
	in.t.Helper()
	r := in.call(http.MethodPost, "/api/v1/admin/skus/"+sku+"/sale",
		mustJSON(in.t, map[string]any{"opens_at": opensAt, "pass_ttl_seconds": passTTL}), adminHeader())
	require.Equal(in.t, http.StatusOK, r.status, "%s", r.body)
	// A test that fails before its close leaves no sale running on a
	// task queue nobody polls.
	in.t.Cleanup(func() {
		_ = s.b.Temporal.TerminateWorkflow(context.Background(), "sale-"+sku, "", "test over")
	})
	return r.json(in.t)
}

// control sends a sale control (open, pause, resume, close).
func (in *instance) control(sku, action string) response {
	in.t.Helper()
	return in.call(http.MethodPost, "/api/v1/admin/skus/"+sku+"/sale/"+action, []byte(`{"reason":"test"}`), adminHeader())
}

func (in *instance) enter(sku, user string) response {
	in.t.Helper()
	return in.call(http.MethodPost, "/api/v1/skus/"+sku+"/queue", nil, buyerHeader(in.t, user))
}

// place is GET .../queue/me as user.
func (in *instance) place(sku, user string) map[string]any {
	in.t.Helper()
	r := in.call(http.MethodGet, "/api/v1/skus/"+sku+"/queue/me", nil, buyerHeader(in.t, user))
	require.Equal(in.t, http.StatusOK, r.status, "%s", r.body)
	return r.json(in.t)
}

// waitPass polls user's place until it carries a pass.
func (in *instance) waitPass(sku, user string) string {
	in.t.Helper()
	var pass string
	require.Eventually(in.t, func() bool {
		pass, _ = in.place(sku, user)["pass"].(string)
		return pass != ""
	}, 30*time.Second, 250*time.Millisecond, "no pass for %s", user) // within the queue's rate limit
	return pass
}

// buyWithPass buys one unit of sku as user with key, sending pass.
func (in *instance) buyWithPass(key, user, sku, pass string) response {
	in.t.Helper()
	h := buyerHeader(in.t, user)
	if pass != "" {
		h.Set(sale.PassHeader, pass)
	}
	return in.call(http.MethodPost, "/api/v1/orders", buyBody(in.t, key, "", sku, 1), h)
}

// skewed is another API instance whose clock runs off by skew.
func (s *stack) skewed(skew time.Duration) *instance {
	cfg := s.apiConfig()
	cfg.Now = func() time.Time { return time.Now().Add(skew) }
	api, err := httpapi.New(deps(s.t, s.connect()), cfg)
	require.NoError(s.t, err)
	return startInstance(s.t, api, true)
}

// No instance hands out a pass or answers 201 before opens_at, whatever its
// clock says: two instances 2 s ahead and 2 s behind poll and buy from
// before the open until every unit is sold; the open is the workflow's
// timer, written to Redis, and nothing reads a local clock.
func TestFairSaleNothingBeforeOpensAt(t *testing.T) {
	s := newStack(t, stackOptions{})
	ahead, behind := s.skewed(2*time.Second), s.skewed(-2*time.Second)
	sku := s.name("open")
	s.api.putSKU(sku, 4, 100, 2, 1)
	opensAt := time.Now().Add(4 * time.Second)
	s.startSale(sku, opensAt, 0)
	var buyers []string
	for i := range 6 {
		u := s.name(fmt.Sprintf("b%d", i))
		buyers = append(buyers, u)
		require.Equal(t, http.StatusCreated, []*instance{ahead, behind}[i%2].enter(sku, u).status)
	}

	var created, early atomic.Int64
	var wg sync.WaitGroup
	for i, u := range buyers {
		in := []*instance{ahead, behind}[i%2]
		wg.Go(func() {
			for n := 0; time.Now().Before(opensAt.Add(20 * time.Second)); n++ {
				p := in.place(sku, u)
				pass, _ := p["pass"].(string)
				if pass == "" && n%3 != 0 {
					if p["sold_out"] == true {
						return // every unit sold, told at once
					}
					time.Sleep(250 * time.Millisecond)
					continue
				}
				// A buy with the pass, or without one now and then.
				r := in.buyWithPass("k", u, sku, pass)
				if time.Now().Before(opensAt) && (pass != "" || r.status == http.StatusCreated) {
					early.Add(1)
					t.Errorf("%s before opens_at: pass %q, answer %d %s", u, pass, r.status, r.body)
				}
				if r.status == http.StatusCreated {
					created.Add(1)
					return
				}
				if pass == "" {
					// SOLD_OUT when the last unit went between this
					// buyer's look at the queue and its buy: the quick
					// answer, which says only what the public stock says.
					assert.Contains(t, []string{"SALE_NOT_OPEN", "PASS_REQUIRED", "SOLD_OUT"}, r.code(t), "%s", r.body)
				}
				time.Sleep(250 * time.Millisecond)
			}
		})
	}
	wg.Wait()
	require.Zero(t, early.Load())
	require.Equal(t, int64(4), created.Load(), "four units, four buyers served")
	r := s.api.call(http.MethodGet, "/api/v1/admin/skus/"+sku+"/sale", nil, adminHeader())
	require.Equal(t, http.StatusOK, r.status)
	openedAt, err := time.Parse(time.RFC3339Nano, r.json(t)["opened_at"].(string))
	require.NoError(t, err)
	require.False(t, openedAt.Before(opensAt), "opened %s, opens_at %s", openedAt, opensAt)
	require.Equal(t, "OPEN", r.json(t)["state"])
	require.Equal(t, http.StatusOK, s.api.control(sku, "close").status)
	s.checkClean(sku)
}

// A pass buys once, for its buyer and SKU, before it expires: a replay by
// another order, another buyer's use, another SKU's, a forged one and an
// expired one are refused with stable codes; the same buy retried with the
// same key answers the same order.
func TestFairSalePassRefusals(t *testing.T) {
	s := newStack(t, stackOptions{})
	api := s.api
	sku, other := s.name("pass"), s.name("other")
	// A limit of 2, so a replay by the buyer who spent the pass reaches
	// the pass's check (at 1 the per-buyer limit refuses it first).
	api.putSKU(sku, 3, 100, 2, 2)
	api.putSKU(other, 3, 100, 1, 1)
	s.startSale(sku, time.Now().Add(time.Hour), 1)
	s.startSale(other, time.Now().Add(time.Hour), 0)
	alice, bob, carol := s.name("alice"), s.name("bob"), s.name("carol")
	for _, u := range []string{alice, bob} {
		require.Equal(t, http.StatusCreated, api.enter(sku, u).status)
	}
	require.Equal(t, http.StatusOK, api.enter(sku, alice).status, "entering twice keeps the entry")
	require.Equal(t, http.StatusCreated, api.enter(other, alice).status)
	require.Equal(t, "SALE_NOT_OPEN", api.buyWithPass("", alice, sku, "").code(t))
	require.Equal(t, http.StatusOK, api.control(sku, "open").status)
	require.Equal(t, http.StatusOK, api.control(other, "open").status)

	pass := api.waitPass(sku, alice)
	want := func(status int, code string, r response) {
		t.Helper()
		require.Equal(t, status, r.status, "%s", r.body)
		require.Equal(t, code, r.code(t))
	}
	want(401, "PASS_REQUIRED", api.buyWithPass("", alice, sku, ""))
	want(401, "PASS_REQUIRED", api.buyWithPass("", alice, sku, "x"+pass))
	want(401, "PASS_REQUIRED", api.buyWithPass("", alice, sku, sale.NewSigner("another-admin-token-0123").Sign(
		sale.Pass{SKU: sku, UserID: alice, Rank: 1, Expiry: time.Now().Add(time.Minute)})))
	want(403, "PASS_FOREIGN", api.buyWithPass("", bob, sku, pass))
	want(403, "PASS_FOREIGN", api.buyWithPass("", alice, other, pass))
	want(400, "INVALID_REQUEST", api.call(http.MethodPost, "/api/v1/orders", buyBody(t, "", "", sku, 2),
		http.Header{"Authorization": buyerHeader(t, alice)["Authorization"], sale.PassHeader: {pass}}))

	r := api.buyWithPass("k1", alice, sku, pass)
	require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
	first := r.json(t)["order_id"]
	r = api.buyWithPass("k1", alice, sku, pass)
	require.Equal(t, http.StatusCreated, r.status, "the same buy retried: %s", r.body)
	require.Equal(t, first, r.json(t)["order_id"])
	want(403, "PASS_USED", api.buyWithPass("k2", alice, sku, pass))
	want(403, "PASS_USED", api.buyWithPass("", alice, sku, pass))

	// Bob's pass (1 s) expires unused: refused, and its unit goes to the
	// next in line, Carol, who came after the open.
	bobPass := api.waitPass(sku, bob)
	time.Sleep(1500 * time.Millisecond)
	want(403, "PASS_EXPIRED", api.buyWithPass("", bob, sku, bobPass))
	require.Equal(t, int64(1), s.dbInventory(sku).Frozen, "one unit bought, nothing else taken")
	require.Equal(t, http.StatusCreated, api.enter(sku, carol).status)
	require.Equal(t, http.StatusCreated, api.buyWithPass("", carol, sku, api.waitPass(sku, carol)).status)

	for _, k := range []string{sku, other} {
		require.Equal(t, http.StatusOK, api.control(k, "close").status)
	}
	want(409, "SALE_CLOSED", api.enter(sku, s.name("late")))
	s.checkClean(sku, other)
}

// The seed whose hash was published when the pre-queue opened, revealed
// after the shuffle, reproduces every entrant's rank; later arrivals are
// ranked after them in order.
func TestFairSaleSeedRevealReproducesRanks(t *testing.T) {
	s := newStack(t, stackOptions{})
	api := s.api
	sku := s.name("seed")
	api.putSKU(sku, 1, 100, 1, 1)
	committed := s.startSale(sku, time.Now().Add(time.Hour), 0)["seed_hash"].(string)
	require.Len(t, committed, 64)
	var users []string
	for i := range 40 {
		u := s.name(fmt.Sprintf("e%02d", i))
		users = append(users, u)
		r := api.enter(sku, u)
		require.Equal(t, http.StatusCreated, r.status)
		require.Equal(t, committed, r.json(t)["seed_hash"])
		require.EqualValues(t, i+1, r.json(t)["ticket"])
	}
	require.Nil(t, api.place(sku, users[0])["seed"], "no seed before the open")
	before := redisText(t, s.b.Redis, sku)
	opened := api.control(sku, "open")
	require.Equal(t, http.StatusOK, opened.status)
	seed := opened.json(t)["seed"].(string)
	h := sha256.Sum256([]byte(seed))
	require.Equal(t, committed, hex.EncodeToString(h[:]))
	require.Contains(t, before, committed, "the commitment was in Redis")
	require.NotContains(t, before, seed, "no key of the SKU held the seed before the open")

	for rank, u := range sale.Ranks(seed, users) {
		p := api.place(sku, u)
		require.EqualValues(t, rank+1, p["rank"], u)
		require.Equal(t, seed, p["seed"])
	}
	late := api.enter(sku, s.name("late"))
	require.Equal(t, http.StatusCreated, late.status)
	require.EqualValues(t, 41, late.json(t)["rank"])
	require.Equal(t, http.StatusOK, api.control(sku, "close").status)
}

// pause stops new passes and buys on every instance from the moment its
// Update answers, while an order placed before it is still paid; resume
// lets the passes buy again.
func TestFairSalePauseStopsSalesPaymentGoesOn(t *testing.T) {
	s := newStack(t, stackOptions{})
	api, second := s.api, s.secondInstance()
	sku := s.name("pause")
	const buyers = 12
	// One unit more than alice and the buyers hold passes for: bob's,
	// who comes during the pause.
	api.putSKU(sku, buyers+2, 100, 2, 1)
	s.startSale(sku, time.Now().Add(time.Hour), 0)
	alice := s.name("alice")
	require.Equal(t, http.StatusCreated, api.enter(sku, alice).status)
	var users []string
	for i := range buyers {
		users = append(users, s.name(fmt.Sprintf("u%d", i)))
		require.Equal(t, http.StatusCreated, api.enter(sku, users[i]).status)
	}
	require.Equal(t, http.StatusOK, api.control(sku, "open").status)
	a1 := api.buyWithPass("a", alice, sku, api.waitPass(sku, alice))
	require.Equal(t, http.StatusCreated, a1.status, "%s", a1.body)
	passes := make([]string, buyers)
	for i, u := range users {
		passes[i] = second.waitPass(sku, u)
	}

	// The buyers buy over 1.5 s on both instances, the operator pauses
	// meanwhile: no buy sent after the pause answered is 201.
	var mu sync.Mutex
	var pausedAt time.Time
	var created, refused, after atomic.Int64
	var wg sync.WaitGroup
	for i, u := range users {
		in := []*instance{api, second}[i%2]
		wg.Go(func() {
			time.Sleep(time.Duration(i) * 1500 * time.Millisecond / buyers)
			sent := time.Now()
			r := in.buyWithPass("k", u, sku, passes[i])
			mu.Lock()
			late := !pausedAt.IsZero() && sent.After(pausedAt)
			mu.Unlock()
			switch {
			case r.status == http.StatusCreated:
				created.Add(1)
				if late {
					after.Add(1)
					t.Errorf("%s bought after the pause answered: %s", u, r.body)
				}
			case r.code(t) == "SALE_PAUSED":
				refused.Add(1)
			default:
				t.Errorf("%s: %d %s", u, r.status, r.body)
			}
		})
	}
	time.Sleep(300 * time.Millisecond)
	start := time.Now()
	r := api.control(sku, "pause")
	took := time.Since(start)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	mu.Lock()
	pausedAt = time.Now()
	mu.Unlock()
	wg.Wait()
	t.Logf("pause answered in %s; %d bought before it, %d refused SALE_PAUSED", took, created.Load(), refused.Load())
	require.Zero(t, after.Load())
	require.Equal(t, int64(buyers), created.Load()+refused.Load())
	require.NotZero(t, refused.Load(), "the buys after the pause were refused")
	for _, in := range []*instance{api, second} {
		p := in.place(sku, s.name("alice"))
		require.Equal(t, "PAUSED", p["state"])
	}
	// No new pass while paused: bob, ranked after everyone, waits with a
	// unit left for him.
	bob := s.name("bob")
	require.Equal(t, http.StatusCreated, second.enter(sku, bob).status)
	for _, in := range []*instance{api, second} {
		p := in.place(sku, bob)
		require.Nil(t, p["pass"], "no pass while paused: %v", p)
		require.EqualValues(t, buyers+1, p["serving"])
	}

	// Alice's order, placed before the pause, is paid during it.
	id := a1.json(t)["order_id"].(string)
	require.Equal(t, http.StatusOK, api.pay(callback{OrderID: id, TransactionID: id + "-t", Amount: 100, Status: "SUCCESS"}).status)
	require.Eventually(t, func() bool { return api.order(id)["status"] == "PAID" }, 30*time.Second, 50*time.Millisecond)

	// Resumed: a refused buyer's pass (60 s) buys, and bob gets his.
	require.Equal(t, http.StatusOK, api.control(sku, "resume").status)
	for i, u := range users {
		if r := second.buyWithPass("k", u, sku, passes[i]); r.status != http.StatusCreated {
			t.Fatalf("%s after resume: %d %s", u, r.status, r.body)
		}
	}
	require.Equal(t, http.StatusCreated, api.buyWithPass("k", bob, sku, api.waitPass(sku, bob)).status)
	require.Equal(t, http.StatusOK, api.control(sku, "close").status)
	s.checkClean(sku)
}

// redisText is every key naming sku with its fields, members and values,
// as one text: what a reader of Redis could see of the SKU.
func redisText(t *testing.T, rdb redis.UniversalClient, sku string) string {
	t.Helper()
	ctx := t.Context()
	var b strings.Builder
	iter := rdb.Scan(ctx, 0, "*"+sku+"*", 1000).Iterator()
	for iter.Next(ctx) {
		key := iter.Val()
		b.WriteString(key + "\n")
		switch typ := rdb.Type(ctx, key).Val(); typ {
		case "string":
			b.WriteString(rdb.Get(ctx, key).Val())
		case "hash":
			fmt.Fprint(&b, rdb.HGetAll(ctx, key).Val())
		case "zset":
			fmt.Fprint(&b, rdb.ZRange(ctx, key, 0, -1).Val())
		case "list":
			fmt.Fprint(&b, rdb.LRange(ctx, key, 0, -1).Val())
		case "set":
			fmt.Fprint(&b, rdb.SMembers(ctx, key).Val())
		default:
			t.Fatalf("key %s of type %s not read", key, typ)
		}
		b.WriteString("\n")
	}
	require.NoError(t, iter.Err())
	return b.String()
}
