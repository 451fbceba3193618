//go:build scaleout

package scaleout

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flashsale/flashsale/internal/crowd"
	"github.com/flashsale/flashsale/internal/testenv"
)

// sale is one case in progress.
type sale struct {
	t     *testing.T
	sku   string
	units int64
	c     *crowd.Crowd
	probe *probe

	mu     sync.Mutex
	faults []string
}

// fault records an injected fault; the first one starts the recovery clock.
func (sl *sale) fault(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	sl.t.Logf("fault at %s: %s", time.Now().Format("15:04:05.000"), msg)
	sl.mu.Lock()
	sl.faults = append(sl.faults, msg)
	sl.mu.Unlock()
	sl.probe.markFault()
}

// midSale waits until the crowd has reserved about half the units, so the
// fault lands while orders are being placed, paid and expired.
func (sl *sale) midSale(ctx context.Context) {
	deadline := time.Now().Add(30 * time.Second)
	for sl.c.Reserved.Load() < sl.units/2 && time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(100 * time.Millisecond)
	}
}

type caseSpec struct {
	name   string
	units  int64
	buyers int
	// starterTokens mints the buyers' tokens with `starter token`, as a
	// newcomer does, instead of in process.
	starterTokens bool
	// inject runs on the test goroutine while the crowd buys.
	inject func(ctx context.Context, sl *sale)
	// beforeCheck runs after the sale, before settling (e.g. reconcile).
	beforeCheck func(ctx context.Context, sl *sale)
}

func TestScaleOut(t *testing.T) {
	cases := []caseSpec{
		{name: "a_full_topology", units: 30, buyers: 120, starterTokens: true},
		{name: "b_kill_history_host", units: 40, buyers: 150, inject: func(ctx context.Context, sl *sale) {
			sl.midSale(ctx)
			cluster(sl.t, "kill", "temporal-history-2")
			sl.fault("kill -9 temporal-history-2")
			// Its shards move to temporal-history-1 once membership
			// notices; the host comes back after 20 s and takes its share.
			time.Sleep(20 * time.Second)
			cluster(sl.t, "start", "temporal-history-2")
		}},
		{name: "c_kill_worker", units: 40, buyers: 150, inject: func(ctx context.Context, sl *sale) {
			sl.midSale(ctx)
			cluster(sl.t, "kill", "worker-1")
			sl.fault("kill -9 worker-1")
			time.Sleep(20 * time.Second)
			cluster(sl.t, "start", "worker-1")
		}},
		{name: "d_kill_api", units: 40, buyers: 150, inject: func(ctx context.Context, sl *sale) {
			sl.midSale(ctx)
			cluster(sl.t, "kill", "api-2")
			sl.fault("kill -9 api-2")
			time.Sleep(15 * time.Second)
			cluster(sl.t, "start", "api-2")
		}},
		{name: "e_kill_redis_master", units: 40, buyers: 150, inject: killRedisMaster,
			beforeCheck: func(ctx context.Context, sl *sale) {
				// Writes the dead master acknowledged but never replicated are
				// found by comparing Redis with MySQL: the reconciler rebuilds
				// the SKU's buckets from MySQL, the source of truth.
				out, err := starter(ctx, "reconcile", "now", "--sku", sl.sku, "--settle", "5s")
				if err != nil {
					sl.t.Errorf("reconcile: %v", err)
				}
				sl.t.Logf("reconcile now: %s", strings.TrimSpace(out))
			}},
		{name: "f_postgres_restart", units: 40, buyers: 150, inject: func(ctx context.Context, sl *sale) {
			sl.midSale(ctx)
			sl.fault("pg_ctlcluster 15 main restart")
			out, err := runCmd(ctx, "pg_ctlcluster", "--skip-systemctl-redirect", "15", "main", "restart")
			if err != nil {
				sl.t.Fatalf("restart PostgreSQL: %v\n%s", err, out)
			}
		}},
		{name: "g_rolling_worker_restart", units: 40, buyers: 150, inject: func(ctx context.Context, sl *sale) {
			sl.midSale(ctx)
			// A new build of the same code: what a deploy does, one worker at
			// a time, the other serving meanwhile.
			cluster(sl.t, "build")
			for _, w := range []string{"worker-1", "worker-2"} {
				sl.fault("graceful restart of %s", w)
				cluster(sl.t, "stop", w)
				cluster(sl.t, "start", w)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { runCase(t, tc) })
	}
}

func runCase(t *testing.T, spec caseSpec) {
	ctx := context.Background()
	res := caseResult{name: spec.name, result: "FAIL", recover: "-"}
	defer func() {
		if !t.Failed() {
			res.result = "PASS"
		}
		record(res)
	}()
	// A case starts on a whole topology even when the previous one failed
	// before restarting what it killed.
	cluster(t, "up")

	id := testenv.UniqueID(t)
	sl := &sale{t: t, sku: "so-" + id, units: spec.units}
	// Buyer names repeat across cases; each case's tokens are its own.
	tokensMu.Lock()
	clear(tokens)
	tokensMu.Unlock()
	createSKU(t, sl.sku, spec.units, 1999, 4, 1)
	probeSKU := "probe-" + id
	createSKU(t, probeSKU, 100000, 100, 4, 1_000_000)
	sl.probe = newProbe(probeSKU)

	if spec.starterTokens {
		// Minted before the sale, four at a time: one exec per buyer would
		// otherwise be timed as the sale.
		mint := func(user string) (string, error) {
			out, err := starter(ctx, "token", "--user", user)
			if err != nil {
				return "", err
			}
			var tok struct {
				Token string `json:"token"`
			}
			if err := json.Unmarshal([]byte(out), &tok); err != nil || tok.Token == "" {
				return "", fmt.Errorf("starter token answered %q", out)
			}
			return tok.Token, nil
		}
		sem := make(chan struct{}, 4)
		var wg sync.WaitGroup
		for i := range spec.buyers {
			user := fmt.Sprintf("buyer-%d", i)
			wg.Go(func() {
				sem <- struct{}{}
				defer func() { <-sem }()
				tok, err := mint(user)
				tokensMu.Lock()
				defer tokensMu.Unlock()
				if err != nil {
					t.Errorf("starter token --user %s: %v", user, err)
					return
				}
				tokens[user] = tok
			})
		}
		wg.Wait()
		if t.Failed() {
			t.FailNow()
		}
		t.Logf("%d buyer tokens minted with starter token", spec.buyers)
	}
	sl.c = newCrowd(apiURL, sl.sku, spec.units, spec.buyers)
	// Unpaid orders expire after the cluster's PAYMENT_TIMEOUT (20 s) and
	// their units are bought again, so the sale needs a few timeouts.
	sl.c.Deadline = 3 * time.Minute

	probeCtx, stopProbe := context.WithCancel(ctx)
	probeDone := make(chan struct{})
	go func() {
		defer close(probeDone)
		sl.probe.run(probeCtx)
	}()

	start := time.Now()
	crowdDone := make(chan struct{})
	go func() {
		defer close(crowdDone)
		sl.c.Run(ctx)
	}()
	if spec.inject != nil {
		spec.inject(ctx, sl)
	}
	<-crowdDone
	// Keep probing a little after the sale so a slow recovery is seen.
	time.Sleep(5 * time.Second)
	stopProbe()
	<-probeDone
	t.Logf("sale over after %s: reserved %d, paid %d, requests %d, same-id retries after no answer %d, answers %v",
		time.Since(start).Round(time.Millisecond), sl.c.Reserved.Load(), sl.c.Paid.Load(), sl.c.Requests.Load(),
		sl.c.ConnRetries.Load(), sl.c.Answers)
	t.Logf("probe: %s", sl.probe.describe())
	if spec.beforeCheck != nil {
		spec.beforeCheck(ctx, sl)
	}

	rep, settleTook := settle(t, ctx, sl.sku, 3*time.Minute)
	t.Logf("settled %s after the sale", settleTook.Round(time.Second))
	if _, took := settle(t, ctx, probeSKU, 3*time.Minute); took > 0 {
		t.Logf("probe SKU settled after %s more", took.Round(time.Second))
	}
	st := rep.SKUs[0]
	t.Logf("after settle: total %d available %d frozen %d sold %d paid units %d, redis %+v, open workflows %d",
		st.Total, st.Available, st.Frozen, st.Sold, st.PaidUnits, st.Redis, st.OpenWorkflows)
	for _, w := range rep.Warnings {
		t.Logf("checker warning: %s", w)
	}
	for _, v := range rep.Violations {
		t.Errorf("violation: %s order=%s txn=%s expected=%v actual=%v: %s", v.Kind, v.OrderID, v.TransactionID, v.Expected, v.Actual, v.Detail)
	}
	res.violations = len(rep.Violations)

	// The operator's checker, as a newcomer runs it: the sale's SKU and the
	// probe's, exit status 0.
	for _, sku := range []string{sl.sku, probeSKU} {
		out, err := starter(ctx, "check", "--sku", sku)
		if err != nil {
			res.violations++
			t.Errorf("starter check --sku %s: %v", sku, err)
		} else {
			t.Logf("starter check --sku %s: %s", sku, firstLine(out))
		}
	}

	db, err := dbOrders(ctx, sl.sku)
	if err != nil {
		t.Fatalf("read orders: %v", err)
	}
	res.orders = len(db)
	mismatches := verifyClient(sl.c, db)
	for _, m := range mismatches {
		t.Errorf("client/database mismatch: %s", m)
	}
	res.violations += len(mismatches)

	// Buyers outnumbered units and kept trying to the end (audit's
	// SKUState.Undersold counts any unit left unsold).
	res.oversold = st.Oversold()
	res.undersold = st.Undersold()
	if res.oversold != 0 {
		t.Errorf("oversold %d: total %d sold %d paid units %d", res.oversold, st.Total, st.Sold, st.PaidUnits)
	}
	if res.undersold != 0 {
		t.Errorf("undersold %d: total %d sold %d available %d frozen %d redis drift %d",
			res.undersold, st.Total, st.Sold, st.Available, st.Frozen, st.Redis.Drift)
	}
	sl.mu.Lock()
	res.faults = fmt.Sprint(len(sl.faults))
	sl.mu.Unlock()
	if spec.inject != nil {
		res.recover = sl.probe.recovery().Round(100 * time.Millisecond).String()
	}
	if len(sl.c.Orders) == 0 {
		t.Errorf("no buyer got a reservation")
	}
}

// killRedisMaster kills -9 the master serving the slot of the SKU's
// bucket 0 (every key of a bucket shares its hash tag) mid-sale, waits for
// its replica to be promoted, and starts the node again (it rejoins as a
// replica of whoever took its slots).
func killRedisMaster(ctx context.Context, sl *sale) {
	sl.midSale(ctx)
	key := "fs:{sku:" + sl.sku + ":b0}:stock"
	port, err := masterPortFor(ctx, key)
	if err != nil {
		sl.t.Fatalf("find the master of %s: %v", key, err)
	}
	cluster(sl.t, "kill", "redis-"+port)
	sl.fault("kill -9 redis-%s (master of %s)", port, key)
	// cluster-node-timeout is 2 s: the replica takes over within seconds.
	deadline := time.Now().Add(60 * time.Second)
	for {
		p, err := masterPortFor(ctx, key)
		if err == nil && p != port {
			sl.t.Logf("slot of %s now served by redis-%s", key, p)
			break
		}
		if time.Now().After(deadline) {
			sl.t.Fatalf("no replica took over the slot of %s within 60 s", key)
		}
		time.Sleep(250 * time.Millisecond)
	}
	time.Sleep(5 * time.Second)
	cluster(sl.t, "start", "redis-"+port)
}

// probe places a one-unit order on its own SKU twice a second, from the
// first fault on, and records how each was answered. The time to recover is
// from the fault until the last probe that failed or took over 2 s.
type probe struct {
	sku    string
	client *http.Client

	mu      sync.Mutex
	faultAt time.Time
	results []probeResult
}

type probeResult struct {
	sent, answered time.Time
	ok             bool
	what           string
}

func newProbe(sku string) *probe {
	return &probe{sku: sku, client: &http.Client{Timeout: 30 * time.Second}}
}

func (p *probe) markFault() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.faultAt.IsZero() {
		p.faultAt = time.Now()
	}
}

func (p *probe) run(ctx context.Context) {
	var wg sync.WaitGroup
	defer wg.Wait()
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for n := 0; ; n++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		wg.Go(func() {
			user := fmt.Sprintf("probe-%d", n%50)
			orderID := fmt.Sprintf("%s-%d-%d", p.sku, n, rand.IntN(1e9))
			body, _ := json.Marshal(map[string]any{"order_id": orderID, "items": []map[string]any{{"sku_id": p.sku, "quantity": 1}}})
			r := probeResult{sent: time.Now()}
			// Like a buyer: no answer or a 5xx means the same order id again.
			for {
				status, resp, err := (&crowd.Crowd{Client: p.client, Base: apiURL}).Do(context.WithoutCancel(ctx), http.MethodPost, "/api/v1/orders", body, buyerAuth(user))
				r.answered = time.Now()
				if err == nil && status < 500 {
					r.ok = status == http.StatusCreated && r.answered.Sub(r.sent) <= 2*time.Second
					var e struct {
						Code string `json:"code"`
					}
					_ = json.Unmarshal(resp, &e)
					r.what = fmt.Sprintf("%d %s", status, e.Code)
					if status == http.StatusCreated {
						r.what = "201 slow"
					}
					break
				}
				r.what = fmt.Sprint(status, err)
				if time.Since(r.sent) > 60*time.Second {
					break
				}
				time.Sleep(300 * time.Millisecond)
			}
			p.mu.Lock()
			p.results = append(p.results, r)
			p.mu.Unlock()
		})
	}
}

// recovery is how long after the first fault the last bad probe answer
// came; 0 when every probe after the fault was answered well.
func (p *probe) recovery() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	var last time.Time
	for _, r := range p.results {
		if !r.ok && !r.sent.Before(p.faultAt) && r.answered.After(last) {
			last = r.answered
		}
	}
	if last.IsZero() || p.faultAt.IsZero() {
		return 0
	}
	return last.Sub(p.faultAt)
}

func (p *probe) describe() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	bad := map[string]int{}
	good := 0
	var worst time.Duration
	for _, r := range p.results {
		if r.ok {
			good++
		} else {
			bad[r.what]++
		}
		worst = max(worst, r.answered.Sub(r.sent))
	}
	return fmt.Sprintf("%d probes answered 201 within 2 s, slowest %s, others %v", good, worst.Round(time.Millisecond), bad)
}

// verifyClient compares what buyers were told with what MySQL holds.
func verifyClient(c *crowd.Crowd, db map[string]string) []string {
	var out []string
	ids := make([]string, 0, len(c.Orders))
	for id := range c.Orders {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	told := map[string]bool{}
	for _, id := range ids {
		o := c.Orders[id]
		st, ok := db[id]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("order %s answered 201 has no row", id))
		case o.Paid:
			told[id] = true
			if st != "PAID" {
				out = append(out, fmt.Sprintf("order %s: buyer told PAID, database %s", id, st))
			}
		case o.Cancelled && st != "CANCELLED":
			out = append(out, fmt.Sprintf("order %s: cancel answered 200, database %s", id, st))
		case o.Action == "expire" && st != "EXPIRED":
			out = append(out, fmt.Sprintf("order %s: left unpaid, database %s", id, st))
		}
	}
	for id, st := range db {
		if st == "PAID" && !told[id] {
			out = append(out, fmt.Sprintf("order %s is PAID but no buyer was told so", id))
		}
	}
	return out
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}
