package main

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/internal/devstack"
	"github.com/flashsale/flashsale/lab/bench"
	"github.com/flashsale/flashsale/workflows"
)

// Settlement's priorities on the task queue when the priority is on
// (Temporal's PriorityKey: 1 is served first; unset is the middle, 3, of
// the server's 5 levels).
const (
	prioritySettle  = 1
	priorityReserve = 5
)

// newMatcher is the dynamic config under which the server honours task
// priorities: server 1.29's default matcher ignores them.
const newMatcher = "matching.useNewMatcher=true"

// settle measures settlement under load (issue 23, item 5): each round
// places p.SettlePays orders, starts ten times as many new reservations at
// once, and pays the first orders while the backlog is served; the
// payments' p99 with the priority (the paying orders' tasks before the
// backlog's) against without, interleaved, on a dev server of its own
// whose matcher honours priorities.
func (b *benchRun) settle(ctx context.Context) error {
	st, err := b.start(ctx, "settle", "", append(devstack.DefaultDynamicConfig(), newMatcher))
	if err != nil {
		return err
	}
	defer st.Close()
	n, backlog := b.p.SettlePays, 10*b.p.SettlePays
	sku := "bench-settle-" + b.run
	if err := st.sku(ctx, sku, int64(2*b.p.Rounds*(n+backlog)+200)); err != nil {
		return err
	}
	if _, w := bench.Orders(ctx, st.svc, sku, 100, "warm", 20, 4); w.Errors > 0 {
		return fmt.Errorf("settle warm-up: %s", w.FirstError)
	}
	res := &bench.SettleResult{Note: fmt.Sprintf("each round %d payments of orders placed just before %d new reservations started at once; "+
		"with the priority the paying orders run at PriorityKey %d and the backlog at %d, without it both unset; server with %s",
		n, backlog, prioritySettle, priorityReserve, newMatcher)}
	var with, without []float64
	for i, side := range bench.Schedule(b.p.Rounds) {
		on := side == bench.SideA
		r, err := b.settleRound(ctx, st, sku, fmt.Sprintf("r%d", i), n, backlog, on)
		if err != nil {
			return fmt.Errorf("settle round %d: %w", i+1, err)
		}
		b.logf("settle %d/%d (priority %t): pay p50 %.0f ms p99 %.0f ms; backlog p99 %.0f ms, drained after %.1f s; %d of %d paid before it drained; %d handed over",
			i+1, 2*b.p.Rounds, on, r.PayP50ms, r.PayP99ms, r.BacklogP99ms, r.DrainS, r.PaidBeforeDrain, n, r.Handoffs)
		res.Rounds = append(res.Rounds, r)
		if on {
			with = append(with, r.PayP99ms)
		} else {
			without = append(without, r.PayP99ms)
		}
	}
	var ratios []float64
	for i := range min(len(with), len(without)) {
		ratios = append(ratios, bench.Ratio(with[i], without[i]))
	}
	res.P99Ratio = bench.SpreadOf(ratios)
	b.logf("settle: p99 with / without the priority %s", res.P99Ratio)
	b.r.Settle = res
	return nil
}

// settleRound is one round: n orders placed, then the backlog started and
// the n orders paid while it runs.
func (b *benchRun) settleRound(ctx context.Context, st *stack, sku, tag string, n, backlog int, priority bool) (bench.SettleRound, error) {
	pay, back := *st.svc, *st.svc
	if priority {
		pay.Priority = temporal.Priority{PriorityKey: prioritySettle}
		back.Priority = temporal.Priority{PriorityKey: priorityReserve}
	}
	order := func(kind string, i int) workflows.OrderInput {
		id := fmt.Sprintf("%s-%s-%s-%d", sku, tag, kind, i)
		return workflows.OrderInput{OrderID: id, UserID: id, Items: []flashsale.Item{{SKU: sku, Quantity: 1}}}
	}
	placed := bench.Measure(ctx, "place", n, 8, func(ctx context.Context, i int) error {
		r, err := pay.Place(ctx, order("pay", i))
		if err == nil && r.Status != flashsale.StatusPendingPayment {
			err = fmt.Errorf("order %d: %s %s", i, r.Status, r.Reason)
		}
		return err
	})
	if placed.Errors > 0 {
		return bench.SettleRound{}, fmt.Errorf("place: %s", placed.FirstError)
	}
	start := time.Now()
	var wg sync.WaitGroup
	backLat := make([]time.Duration, backlog)
	var backErrs atomic.Int64
	var firstErr atomic.Value
	for i := range backlog {
		wg.Go(func() {
			t0 := time.Now()
			if _, err := back.Place(ctx, order("new", i)); err != nil {
				backErrs.Add(1)
				firstErr.CompareAndSwap(nil, err.Error())
			}
			backLat[i] = time.Since(t0)
		})
	}
	// The payments arrive once the backlog has reached the server.
	time.Sleep(100 * time.Millisecond)
	payAt := time.Now()
	payLat := make([]time.Duration, n)
	payDone := make([]time.Time, n)
	var handoffs atomic.Int64
	var pwg sync.WaitGroup
	for i := range n {
		pwg.Go(func() {
			id := order("pay", i).OrderID
			t0 := time.Now()
			out, err := pay.Pay(ctx, id, workflows.Payment{TransactionID: "t-" + id, Amount: 100})
			payLat[i], payDone[i] = time.Since(t0), time.Now()
			switch {
			case err != nil:
				backErrs.Add(1)
				firstErr.CompareAndSwap(nil, fmt.Sprintf("pay %s: %v", id, err))
			case out.Queued:
				handoffs.Add(1)
			case out.Status != flashsale.StatusPaid:
				backErrs.Add(1)
				firstErr.CompareAndSwap(nil, fmt.Sprintf("pay %s: %s", id, out.Status))
			}
		})
	}
	pwg.Wait()
	wg.Wait()
	if backErrs.Load() > 0 {
		return bench.SettleRound{}, fmt.Errorf("%d errors, first: %v", backErrs.Load(), firstErr.Load())
	}
	var drained time.Duration
	for _, l := range backLat {
		drained = max(drained, l)
	}
	drainedAt := start.Add(drained)
	before := 0
	for _, d := range payDone {
		if d.Before(drainedAt) {
			before++
		}
	}
	ps := bench.Summarize("pay", slices.Clone(payLat), time.Since(payAt))
	bs := bench.Summarize("backlog", slices.Clone(backLat), drained)
	return bench.SettleRound{Priority: priority, Pays: n, Backlog: backlog, PayP50ms: ps.P50ms, PayP99ms: ps.P99ms,
		BacklogP99ms: bs.P99ms, DrainS: drained.Seconds(), PaidBeforeDrain: before, Handoffs: int(handoffs.Load())}, nil
}
