//go:build faults

package faults

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/flashsale/flashsale/internal/app/apptest"
	"github.com/flashsale/flashsale/internal/loadgen"
	"github.com/flashsale/flashsale/internal/testenv"
	"github.com/flashsale/flashsale/lab/crowd"
)

// caseResult is one row of the summary table.
type caseResult struct {
	name       string
	orders     int
	faults     int64
	violations int
	oversold   int64
	undersold  int64
	// pay5xx counts payment callbacks answered 5xx: each one leaves the
	// outcome to the provider's retry schedule, so it must be 0.
	pay5xx int64
	// recovery is the longest time from a timed fault to the next
	// successful answer (see sale.recovery); zero when the case has no
	// timed fault.
	recovery time.Duration
	// took is the sale's length and how it ended (crowd.StoppedBy).
	took      time.Duration
	stoppedBy string
	result    string
}

// summary is the suite's table, printed by TestMain after every case.
var summary = testenv.Summary{Title: "fault-injection summary", Flags: tabwriter.AlignRight | tabwriter.Debug,
	Columns: []string{"case", "orders", "faults injected", "violations", "oversold", "undersold", "payments 5xx",
		"time to recover", "sale", "result"}}

func record(r caseResult) {
	recovery := "-"
	if r.recovery > 0 {
		recovery = r.recovery.Round(10 * time.Millisecond).String()
	}
	summary.Add(r.name, r.orders, r.faults, r.violations, r.oversold, r.undersold, r.pay5xx, recovery,
		fmt.Sprintf("%s (%s)", r.took.Round(time.Second), r.stoppedBy), r.result)
}

// sale is one case in progress.
type sale struct {
	t      *testing.T
	s      *stack
	sku    string
	units  int64
	c      *crowd.Crowd
	faults int64
	// faultAt are the times of the faults injected by the case itself.
	faultAt []time.Time
}

// fault notes one fault injected now.
func (sl *sale) fault() {
	sl.faults++
	sl.faultAt = append(sl.faultAt, time.Now())
}

// recovery is the longest time from one of the case's faults to the first
// successful answer after it (a reservation, or a payment answered PAID):
// how long buyers could get nothing done. A fault after which nothing
// succeeded (the sale was over) does not count.
func (sl *sale) recovery() time.Duration {
	var worst time.Duration
	for _, at := range sl.faultAt {
		if ok, found := sl.c.FirstSuccessAfter(at); found && ok.Sub(at) > worst {
			worst = ok.Sub(at)
		}
	}
	return worst
}

// caseSpec describes a case: its stack, its crowd, and the fault, which
// runs on the test goroutine while the crowd buys.
type caseSpec struct {
	name    string
	opts    stackOptions
	units   int64
	buyers  int
	crowd   func(*crowd.Crowd)
	inject  func(ctx context.Context, sl *sale)
	beforeC func(ctx context.Context, sl *sale) // after the sale, before the check
	after   func(ctx context.Context, sl *sale) // after the check
}

func runCase(t *testing.T, spec caseSpec) {
	ctx := context.Background()
	res := caseResult{name: spec.name, result: "FAIL"}
	defer func() {
		if !t.Failed() {
			res.result = "PASS"
		}
		record(res)
	}()

	s := newStack(t, spec.opts)
	sl := &sale{t: t, s: s, sku: "f-" + s.id, units: spec.units}
	s.createSKU(sl.sku, spec.units, 1999, 4)
	sl.c = newCrowd(s.baseURL(), sl.sku, spec.units, spec.buyers)
	if spec.crowd != nil {
		spec.crowd(sl.c)
	}

	start := time.Now()
	crowdDone := sl.c.Start(ctx)
	if spec.inject != nil {
		spec.inject(ctx, sl)
	}
	<-crowdDone
	res.took, res.stoppedBy = time.Since(start), sl.c.StoppedBy
	t.Logf("sale over after %s (%s, limit %s): reserved %d, paid %d, requests %d, same-id retries after no answer %d, answers %v; payments answered 5xx %d, 202 %d",
		res.took.Round(time.Millisecond), sl.c.StoppedBy, sl.c.Deadline, sl.c.Reserved.Load(), sl.c.Paid.Load(), sl.c.Requests.Load(),
		sl.c.ConnRetries.Load(), sl.c.Answers, sl.c.Pay5xx.Load(), sl.c.PayQueued.Load())
	if sl.c.StoppedBy != "sold out" {
		t.Errorf("the crowd stopped at its limit (%s) before the SKU sold out", sl.c.Deadline)
	}
	if spec.beforeC != nil {
		spec.beforeC(ctx, sl)
	}

	rep := s.settleAndCheck(ctx, sl.sku, 3*time.Minute)
	res.faults = sl.faults + sl.c.OddCallbacks.Load()
	res.recovery = sl.recovery()
	res.pay5xx = sl.c.Pay5xx.Load()
	if res.pay5xx != 0 {
		t.Errorf("%d payment callbacks answered 5xx", res.pay5xx)
	}
	st := rep.SKUs[0]
	res.violations = apptest.ReportAudit(t, rep)

	db, err := s.dbOrders(ctx)
	if err != nil {
		t.Fatalf("read orders: %v", err)
	}
	res.orders = len(db)
	t.Logf("orders in mysql by status %v; buyers' winners %s", countStatus(db), describeWinners(sl.c))
	mismatches := verifyClient(sl.c, db)
	for _, m := range mismatches {
		t.Errorf("client/database mismatch: %s", m)
	}
	res.violations += len(mismatches)

	// Buyers outnumbered units and kept trying to the end.
	res.oversold, res.undersold = apptest.CheckSoldOut(t, st, fmt.Sprintf(" (buyers kept trying until %s)", sl.c.Deadline))
	if st.Redis.Drift < 0 {
		t.Errorf("redis offers %d units mysql does not have", -st.Redis.Drift)
	}
	if len(sl.c.Orders) == 0 {
		t.Errorf("no buyer got a reservation")
	}
	if spec.after != nil {
		spec.after(ctx, sl)
	}
}

func countStatus(db map[string]orderRow) map[string]int {
	out := map[string]int{}
	for _, r := range db {
		out[r.Status]++
	}
	return out
}

// describeWinners counts what winners did and, for payments at the exact
// deadline, what they were answered.
func describeWinners(c *crowd.Crowd) string {
	actions := map[string]int{}
	deadline := map[string]int{}
	late := 0
	for _, o := range c.Orders {
		actions[o.Action]++
		if o.Action == "deadline-pay" {
			deadline[o.DeadlineAnswer]++
		}
		late += len(o.LateTxns)
	}
	return fmt.Sprintf("%v, deadline payments answered %v, late transactions %d", actions, deadline, late)
}

// verifyClient compares what buyers were told with what MySQL holds.
func verifyClient(c *crowd.Crowd, db map[string]orderRow) []string {
	var out []string
	clientPaid := map[string]bool{}
	for _, id := range slices.Sorted(maps.Keys(c.Orders)) {
		o := c.Orders[id]
		row, ok := db[id]
		if !ok {
			out = append(out, fmt.Sprintf("order %s answered 201 has no row", id))
			continue
		}
		bad := func(format string, args ...any) {
			out = append(out, fmt.Sprintf("order %s (%s, db %+v): ", id, o.Action, row)+fmt.Sprintf(format, args...))
		}
		if o.Paid {
			clientPaid[id] = true
			if row.Status != "PAID" || row.Captured != 1 {
				bad("buyer was told PAID")
			}
		}
		if o.Cancelled && row.Status != "CANCELLED" {
			bad("cancel answered 200")
		}
		if o.Action == "expire" && row.Status != "EXPIRED" {
			bad("left unpaid, not expired")
		}
		for txn, refund := range o.LateTxns {
			if !refund {
				bad("late transaction %s not answered refund REQUIRED", txn)
			}
		}
		if n := len(o.LateTxns); n > 0 && row.Refunds != n {
			bad("%d late transactions, %d refunds recorded", n, row.Refunds)
		}
		// Money that reached the API before the deadline is kept, however
		// busy the order was: sent a second early, it arrived in time.
		if !o.PaySentAt.IsZero() && !o.PaySentAt.After(o.PayBy.Add(-time.Second)) && (!o.Paid || row.Status != "PAID") {
			bad("payment sent %s before the deadline not kept (told paid %v)", o.PayBy.Sub(o.PaySentAt).Round(time.Millisecond), o.Paid)
		}
		if o.Action == "deadline-pay" {
			switch o.DeadlineAnswer {
			case "PAID":
				if row.Status != "PAID" {
					bad("deadline payment answered PAID")
				}
			case "EXPIRED+refund":
				if row.Status != "EXPIRED" || row.Refunds != 1 || row.Captured != 0 {
					bad("deadline payment answered EXPIRED with refund")
				}
			default:
				bad("deadline payment answered %q", o.DeadlineAnswer)
			}
		}
	}
	for id, row := range db {
		if row.Status == "PAID" && !clientPaid[id] {
			out = append(out, fmt.Sprintf("order %s is PAID but no buyer was told so", id))
		}
	}
	return out
}

// waitReserved blocks until the crowd holds n reservations (or the sale
// ended), so a fault lands while reservations are under way.
func (sl *sale) waitReserved(ctx context.Context, n int64) {
	waitFor(ctx, 2*time.Minute, func() bool { return sl.c.Reserved.Load() >= n || sl.c.SoldOut.Load() })
}

// firstExpiry returns the earliest pay_by of an order left to expire.
func (sl *sale) firstExpiry() (time.Time, bool) {
	var first time.Time
	sl.c.Each(func(o *crowd.Order) {
		if o.Action == "expire" && (first.IsZero() || o.PayBy.Before(first)) {
			first = o.PayBy
		}
	})
	return first, !first.IsZero()
}

func TestFaults(t *testing.T) {
	cases := []caseSpec{
		{
			// 1: kill -9 of the worker while reservations run, and again
			// while the first expiries compensate.
			name: "1 worker kill -9 (reserve + compensate)", units: 20, buyers: 80,
			inject: func(ctx context.Context, sl *sale) {
				sl.waitReserved(ctx, 3)
				sl.s.worker().kill9()
				sl.fault()
				sl.t.Logf("worker killed with %d reserved", sl.c.Reserved.Load())
				time.Sleep(2 * time.Second)
				sl.s.startWorker()

				var at time.Time
				waitFor(ctx, time.Minute, func() bool { var ok bool; at, ok = sl.firstExpiry(); return ok })
				loadgen.Sleep(ctx, time.Until(at)+50*time.Millisecond)
				sl.s.worker().kill9()
				sl.fault()
				sl.t.Logf("worker killed at the first expiry (%s)", at.Format(time.StampMilli))
				time.Sleep(2 * time.Second)
				sl.s.startWorker()
			},
		},
		{
			// 2: kill -9 of the API in the flood, twice; buyers retry with
			// the same order id against the restarted API.
			name: "2 api kill -9 (flood)", units: 20, buyers: 100,
			inject: func(ctx context.Context, sl *sale) {
				for _, n := range []int64{2, 10} {
					sl.waitReserved(ctx, n)
					sl.s.api().kill9()
					sl.fault()
					sl.t.Logf("api killed with %d reserved", sl.c.Reserved.Load())
					time.Sleep(time.Second)
					sl.s.startAPI()
				}
			},
		},
		{
			// 7: duplicate, reordered and late callbacks, and payments at
			// the exact deadline.
			name: "7 payment callbacks (dup/reorder/late/deadline)", units: 20, buyers: 80,
			crowd: func(c *crowd.Crowd) { c.Callbacks = true },
		},
		{
			// 3b: SCRIPT FLUSH under load: every EVALSHA meets NOSCRIPT.
			name: "3b redis SCRIPT FLUSH under load", units: 20, buyers: 80,
			inject: func(ctx context.Context, sl *sale) {
				sl.waitReserved(ctx, 2)
				for i := 0; i < 30 && !sl.c.SoldOut.Load(); i++ {
					if err := sl.s.redis.scriptFlush(ctx); err != nil {
						sl.t.Errorf("script flush: %v", err)
						return
					}
					sl.fault()
					time.Sleep(300 * time.Millisecond)
				}
			},
		},
		{
			// 9: the Temporal dev server (SQLite file) restarted mid-sale.
			name: "9 temporal restart (db file)", units: 20, buyers: 80,
			inject: func(ctx context.Context, sl *sale) {
				sl.waitReserved(ctx, 4)
				sl.t.Logf("restarting temporal with %d reserved", sl.c.Reserved.Load())
				sl.fault()
				sl.s.restartTemporal(time.Second)
			},
		},
		{
			// 3a: Redis restarted empty mid-sale (a failover that lost the
			// writes): reconcile restores the buckets from MySQL, and the
			// reconcile schedule corrects what the lost order markers cost.
			name: "3a redis restarted empty + reconcile", units: 20, buyers: 80,
			inject: func(ctx context.Context, sl *sale) {
				// Reconciliation is the product's repair; it runs on a
				// Temporal Schedule. The settle is short for the test (see
				// the report).
				if out, err := sl.s.starter(ctx, "reconcile", "schedule", "--sku", sl.sku, "--every", "5s", "--settle", "3s"); err != nil {
					sl.t.Fatalf("reconcile schedule: %v", err)
				} else {
					sl.t.Logf("reconcile schedule: %s", strings.TrimSpace(out))
				}
				sl.waitReserved(ctx, 7)
				sl.t.Logf("restarting redis empty with %d reserved", sl.c.Reserved.Load())
				sl.fault()
				sl.s.redis.restartEmpty(500 * time.Millisecond)
				out, err := sl.s.reconcileNow(ctx, sl.sku, 3*time.Second)
				if err != nil {
					sl.t.Errorf("reconcile now: %v", err)
				}
				sl.t.Logf("reconcile now: %s", strings.TrimSpace(out))
			},
		},
	}
	for _, spec := range cases {
		t.Run(spec.name, func(t *testing.T) { runCase(t, spec) })
	}
	t.Run("5 mariadb restart", func(t *testing.T) {
		m := startMaria(t)
		runCase(t, caseSpec{
			name: "5 mariadb restart", units: 20, buyers: 80,
			opts: stackOptions{mysqlServer: m.dsn("")},
			inject: func(ctx context.Context, sl *sale) {
				sl.waitReserved(ctx, 4)
				sl.t.Logf("killing mariadb with %d reserved", sl.c.Reserved.Load())
				sl.fault()
				m.restart(time.Second)
			},
		})
	})
}
