//go:build integration

package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Tests of a fair sale's queue as buyers and the sale page see it (issue
// 23): SOLD_OUT at once for everyone still queued, the waitlist in rank
// order, the ETA, the queue on the live page.

// enterQueue enters n new buyers (named prefix and a number) into the
// pre-queue of sku's sale and returns them in the order they entered.
func (s *stack) enterQueue(sku, prefix string, n int) []string {
	s.t.Helper()
	users := make([]string, n)
	for i := range users {
		users[i] = s.name(fmt.Sprintf("%s%02d", prefix, i))
		require.Equal(s.t, http.StatusCreated, s.api.enter(sku, users[i]).status)
	}
	return users
}

// openQueuedSale puts a SKU named name with units (per buyer 1), enters
// buyers into its sale's pre-queue, opens it and returns the SKU and the
// buyers in rank order.
func (s *stack) openQueuedSale(name string, units, buyers int) (string, []string) {
	s.t.Helper()
	sku := s.name(name)
	s.api.putSKU(sku, int64(units), 100, 2, 1)
	s.startSale(sku, time.Now().Add(time.Hour), 0)
	users := s.enterQueue(sku, name[:1], buyers)
	require.Equal(s.t, http.StatusOK, s.api.control(sku, "open").status)
	return sku, s.byRank(sku, users)
}

// byRank is users sorted by their rank in sku's sale.
func (s *stack) byRank(sku string, users []string) []string {
	s.t.Helper()
	ranks := map[string]float64{}
	for _, u := range users {
		ranks[u] = s.api.place(sku, u)["rank"].(float64)
	}
	out := slices.Clone(users)
	slices.SortFunc(out, func(a, b string) int { return int(ranks[a] - ranks[b]) })
	return out
}

// When the last unit is taken, everyone still queued is told SOLD_OUT at
// once: every look at the queue sent after the last buy was answered says
// so (no stale answer), so a buyer looking once a second hears it within
// the 1 s. Those buyers may then join the waitlist, which keeps
// their rank order whenever each joins; a released unit goes to the best
// ranked of them; the close closes the waitlist.
func TestFairSaleSoldOutAtOnceWaitlistInRankOrder(t *testing.T) {
	s := newStack(t, stackOptions{buyRate: 100})
	api := s.api
	const units, buyers = 3, 12
	sku, ranked := s.openQueuedSale("soldout", units, buyers)
	winners, losers := ranked[:units], ranked[units:]

	// The losers look at the queue every 100 ms while the winners buy.
	type look struct {
		sent, got time.Time
		soldOut   bool
	}
	looks := make([][]look, len(losers))
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i, u := range losers {
		wg.Go(func() {
			for {
				sent := time.Now()
				p := api.place(sku, u)
				// A pass may go out for a unit a buy in flight is taking
				// (docs/design/fair-sale.md); it is sold out all the same.
				looks[i] = append(looks[i], look{sent: sent, got: time.Now(), soldOut: p["sold_out"] == true})
				select {
				case <-stop:
					return
				case <-time.After(100 * time.Millisecond):
				}
			}
		})
	}
	var ids []string
	var lastBuy time.Time
	for _, u := range winners {
		r := api.buyWithPass("k", u, sku, api.waitPass(sku, u))
		require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
		lastBuy = time.Now()
		ids = append(ids, r.json(t)["order_id"].(string))
	}
	time.Sleep(1500 * time.Millisecond)
	close(stop)
	wg.Wait()
	var worst time.Duration
	for i, u := range losers {
		var first time.Time
		for _, l := range looks[i] {
			if l.sent.After(lastBuy) {
				require.True(t, l.soldOut, "%s: a look sent %s after the last buy is not SOLD_OUT", u, l.sent.Sub(lastBuy))
			}
			if l.soldOut && first.IsZero() {
				first = l.got
			}
		}
		require.False(t, first.IsZero(), "%s never heard SOLD_OUT", u)
		worst = max(worst, first.Sub(lastBuy))
		require.LessOrEqual(t, first.Sub(lastBuy), time.Second, "%s heard SOLD_OUT %s after the last unit", u, first.Sub(lastBuy))
	}
	t.Logf("every queued buyer heard SOLD_OUT within %s of the last buy's answer (looking every 100 ms)", worst.Round(time.Millisecond))

	// The losers join the waitlist, the worst ranked first: it keeps the
	// rank order.
	for i := len(losers) - 1; i >= 0; i-- {
		r := api.joinWaitlist(sku, losers[i])
		require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
	}
	for i, u := range losers {
		r := api.waitlistMe(sku, u)
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		require.EqualValues(t, i+1, r.json(t)["position"], "%s, rank %d of the losers", u, i+1)
	}
	require.Equal(t, "NOT_IN_QUEUE", api.joinWaitlist(sku, s.name("stranger")).code(t))

	// A winner cancels: the unit goes to the best ranked loser.
	require.Equal(t, http.StatusOK, api.cancel(winners[0], ids[0]).status)
	offer := api.offerOf(sku, losers[0])
	api.pendingOrder(offer, losers[0], 100)
	r := api.waitlistMe(sku, losers[1])
	require.EqualValues(t, 1, r.json(t)["position"], "the next in rank order is first now")

	// Closed: nobody waits any more, nobody joins.
	require.Equal(t, http.StatusOK, api.control(sku, "close").status)
	require.Equal(t, "SALE_CLOSED", api.joinWaitlist(sku, losers[1]).code(t))
	require.Equal(t, "NOT_ON_WAITLIST", api.waitlistMe(sku, losers[2]).code(t))
	s.checkClean(sku)
}

// GET .../queue/me?wait=N holds a buyer still waiting for their turn (a
// long poll) and answers when the SKU sells out, without waiting out the
// N seconds: 4 buyers hold looks of 10 s while the 2 ranked before them
// buy the 2 units; every held look is answered sold_out, each before its
// 10 s. A wait outside 0..10 whole seconds is refused, however large.
func TestFairSaleLongPollAnswersTheSellOut(t *testing.T) {
	s := newStack(t, stackOptions{buyRate: 100})
	api := s.api
	const units, buyers = 2, 6
	sku, ranked := s.openQueuedSale("longpoll", units, buyers)
	winners, losers := ranked[:units], ranked[units:]

	// The last two overflowed a multiplication by a second before the
	// bound was checked (issue 35), and were answered 200.
	for _, bad := range []string{"11", "-1", "1.5", "soon", "18446744074", "9223372036854775807"} {
		r := api.call(http.MethodGet, "/api/v1/skus/"+sku+"/queue/me?wait="+bad, nil, buyerHeader(t, losers[0]))
		require.Equal(t, http.StatusBadRequest, r.status, "wait=%s", bad)
		require.Equal(t, "INVALID_REQUEST", r.code(t), "wait=%s", bad)
	}

	passes := make([]string, len(winners))
	for i, u := range winners {
		passes[i] = api.waitPass(sku, u)
	}
	type answer struct {
		status  int
		soldOut bool
		took    time.Duration
		body    string
	}
	answers := make([]answer, len(losers))
	var wg sync.WaitGroup
	for i, u := range losers {
		wg.Go(func() {
			// A pass may go out for a unit a buy in flight is taking
			// (docs/design/fair-sale.md): that look answers the pass, and
			// the buyer looks again.
			for range 50 {
				sent := time.Now()
				r := api.call(http.MethodGet, "/api/v1/skus/"+sku+"/queue/me?wait=10", nil, buyerHeader(t, u))
				answers[i] = answer{status: r.status, took: time.Since(sent), body: string(r.body)}
				if r.status != http.StatusOK {
					return
				}
				if answers[i].soldOut = r.json(t)["sold_out"] == true; answers[i].soldOut {
					return
				}
				time.Sleep(250 * time.Millisecond) // within the queue's rate limit, as waitPass
			}
		})
	}
	time.Sleep(300 * time.Millisecond) // the looks are held (no pass, units left)
	var lastBuy time.Time
	for i, u := range winners {
		r := api.buyWithPass("k", u, sku, passes[i])
		require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
		lastBuy = time.Now()
	}
	wg.Wait()
	var worst time.Duration
	for i, a := range answers {
		require.Equal(t, http.StatusOK, a.status, "%s", losers[i])
		require.True(t, a.soldOut, "%s: the held look answers sold_out: %s", losers[i], a.body)
		require.Less(t, a.took, 10*time.Second, "%s: answered by the sell-out, not its wait's end", losers[i])
		worst = max(worst, a.took)
	}
	t.Logf("every held look answered sold_out, the last within %s of the last buy's answer (the longest held %s)",
		time.Since(lastBuy).Round(time.Millisecond), worst.Round(time.Millisecond))
}

// GET .../queue/me estimates the wait: until opens_at before the open, 0
// for a buyer holding a pass, nothing for a rank beyond the stock before
// any unit came back, then the ranks ahead over the pace at which units
// come back (here, passes expiring unused after 1 s).
func TestFairSaleQueuePlaceETA(t *testing.T) {
	s := newStack(t, stackOptions{buyRate: 100})
	api := s.api
	sku := s.name("eta")
	api.putSKU(sku, 2, 100, 2, 1)
	s.startSale(sku, time.Now().Add(time.Hour), 1)
	users := s.enterQueue(sku, "t", 6)
	eta := func(u string) (float64, bool) {
		v, ok := api.place(sku, u)["eta_seconds"].(float64)
		return v, ok
	}
	before, ok := eta(users[0])
	require.True(t, ok)
	require.InDelta(t, 3600, before, 30, "until opens_at")

	require.Equal(t, http.StatusOK, api.control(sku, "open").status)
	ranked := s.byRank(sku, users)
	first, ok := eta(ranked[0])
	require.True(t, ok)
	require.Zero(t, first, "holds a pass")
	_, ok = eta(ranked[4])
	require.False(t, ok, "no unit has come back yet: nothing to estimate from")

	// The two passes expire unused; their units go to ranks 3 and 4.
	require.Eventually(t, func() bool { return api.place(sku, ranked[2])["pass"] != nil }, 10*time.Second, 100*time.Millisecond)
	later, ok := eta(ranked[4])
	require.True(t, ok, "units came back: a pace to estimate from")
	require.Positive(t, later)
	require.Less(t, later, 60.0)
	t.Logf("rank 5's ETA after two units came back: %.0f s", later)
	require.Equal(t, http.StatusOK, api.control(sku, "close").status)
}

// The live sale page shows a fair sale's queue: its state, its length and
// the serving counter; a SKU sold without a queue shows no queue panel.
func TestSalePageShowsTheQueue(t *testing.T) {
	s := newStack(t, stackOptions{buyRate: 100})
	api := s.api
	sku := s.name("pageq")
	api.putSKU(sku, 2, 100, 2, 1)

	ctx := browser(t)
	tctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	_, err := chromedp.Run(tctx, chromedp.NavigateResponse(api.url+"/sale/"+sku))
	require.NoError(t, err)
	type queueView struct {
		Hidden                 bool
		State, Length, Serving string
		Updated                string
	}
	read := func() queueView {
		v, err := chromedp.Run(tctx, chromedp.Evaluate[queueView](`(() => {
  const t = (id) => document.getElementById(id).textContent;
  return { Hidden: document.getElementById("queue-panel").hidden, State: t("queue-state"),
    Length: t("queue-length"), Serving: t("queue-serving"), Updated: document.body.dataset.at || "" };
})()`))
		require.NoError(t, err)
		return v
	}
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		v := read()
		assert.NotEmpty(c, v.Updated, "rendered")
		assert.True(c, v.Hidden, "no sale, no queue: %+v", v)
	}, 30*time.Second, 200*time.Millisecond)

	s.startSale(sku, time.Now().Add(time.Hour), 0)
	users := s.enterQueue(sku, "p", 5)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		v := read()
		assert.Equal(c, queueView{State: "PREQUEUE", Length: "5", Serving: "0", Updated: v.Updated}, v)
	}, 30*time.Second, 200*time.Millisecond)

	require.Equal(t, http.StatusOK, api.control(sku, "open").status)
	api.place(sku, users[0]) // the counter moves on a look: two units, two passes
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		v := read()
		assert.Equal(c, queueView{State: "OPEN", Length: "5", Serving: "2", Updated: v.Updated}, v)
	}, 30*time.Second, 200*time.Millisecond)
	require.Equal(t, http.StatusOK, api.control(sku, "close").status)
}
