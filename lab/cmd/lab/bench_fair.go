package main

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/flashsale/flashsale/internal/app"
	"github.com/flashsale/flashsale/internal/demo"
	"github.com/flashsale/flashsale/internal/edge"
	"github.com/flashsale/flashsale/internal/httpapi"
	"github.com/flashsale/flashsale/lab/fairness"
)

// fairUnits is the fairness benchmark's stock: issue 23's 1,000 units
// for its 10,000 buyers (fairness.DefaultClasses).
const fairUnits = 1000

// fairRun is one sale of the fairness benchmark: the queue off (the
// race) or on, its buyers polling their place or holding their looks.
type fairRun struct {
	name     string
	queue    bool
	longPoll time.Duration
}

// fairRuns are the fairness benchmark's sales, in the order they run.
var fairRuns = []fairRun{
	{name: "off"},
	{name: "on", queue: true},
	{name: "on-longpoll", queue: true, longPoll: httpapi.MaxQueueWait},
}

// fair runs the fairness benchmark (issue 23, item 6) on st: the same crowd
// against a SKU sold as today (no queue: the race), then against a SKU sold
// through the fair queue, its buyers polling, then holding their looks
// (the long poll, over h2c), each SKU of its own on one API instance with
// the production edge (its in-flight cap is the passes' bound).
func (b *benchRun) fair(ctx context.Context, st *stack) error {
	inFlight := int64(edge.DefaultMaxInFlight)
	api, err := st.WithAPI(ctx, func(c *httpapi.Config) {
		c.MaxInFlight, c.SalePasses, c.H2C = inFlight, b.p.FairPasses, true
	})
	if err != nil {
		return err
	}
	sales := app.SaleStore(st.Backend)
	// --fair-scale shrinks the crowd and the stock together, keeping the
	// classes' shares and the win rate: the largest crowd a loaded box holds.
	classes, fairUnits := slices.Clone(fairness.DefaultClasses), int64(math.Round(fairUnits*b.p.FairScale))
	for i := range classes {
		classes[i].Buyers = int(math.Round(float64(classes[i].Buyers) * b.p.FairScale))
	}
	for _, run := range fairRuns {
		if b.p.FairRuns != "" && !slices.Contains(strings.Split(b.p.FairRuns, ","), run.name) {
			continue
		}
		queue := run.queue
		sku := fmt.Sprintf("bench-fair-%s-%s", b.run, run.name)
		if err := api.Admin(ctx, http.MethodPut, "/api/v1/admin/skus/"+sku,
			map[string]any{"total": fairUnits, "price": 100, "buckets": 16, "per_user_limit": 1}, nil); err != nil {
			return fmt.Errorf("fair: create %s: %w", sku, err)
		}
		if err := api.Admin(ctx, http.MethodPost, "/api/v1/admin/skus/"+sku+"/preheat", struct{}{}, nil); err != nil {
			return fmt.Errorf("fair: preheat %s: %w", sku, err)
		}
		b.logf("fairness: %d buyers for %d units, queue %s", classBuyers(classes), fairUnits, run.name)
		stopTrace := b.fairTrace(ctx, st, api)
		res, err := fairness.Run(ctx, fairness.Options{
			Base: api.URL, SKU: sku, Units: fairUnits, Classes: classes,
			Token: func(user string) (string, error) { return api.Buyers.Token(user, time.Hour) },
			Queue: queue, PreQueue: b.p.FairPreQueue, Admin: api.Admin,
			Watch: func(ctx context.Context) (int64, int64, int64, error) {
				av, err := st.Backend.Stock.AvailableTo(ctx, sku, "")
				if err != nil {
					return 0, 0, 0, err
				}
				board, err := sales.BoardOf(ctx, sku)
				return av.Units, board.Outstanding, board.Capacity, err
			},
			InFlightCap: inFlight, Deadline: b.p.FairDeadline, Seed: 23, LongPoll: run.longPoll,
		})
		stopTrace()
		if err != nil {
			return fmt.Errorf("fair: %w", err)
		}
		inv, err := st.Backend.Orders.Inventory(ctx, sku)
		if err != nil {
			return fmt.Errorf("fair: %w", err)
		}
		taken := inv.Frozen + inv.Sold
		res.Oversold = max(0, taken-fairUnits, res.Reserved-fairUnits)
		res.Undersold = max(0, fairUnits-taken)
		for _, c := range res.Classes {
			b.logf("  %s: %d of %d won (%.3f, 95%% CI %.3f-%.3f), %d requests, %d ticks dropped, sends late by %.1f ms mean, %.0f ms max; rate minus the first class's: 95%% CI %+.3f..%+.3f",
				c.Name, c.Wins, c.Buyers, c.WinRate, c.Lo, c.Hi, c.Requests, c.Skipped, c.LateMs, c.LateMaxMs, c.DiffLo, c.DiffHi)
		}
		b.logf("  reserved %d (MySQL %d), oversold %d, undersold %d, last unit after %.1f s, %d requests in %.0f s; tau %.3f (tau-b %.3f of max %.3f, %d admitted at %d moments), passes outstanding max %d (over left+cap: %d, over capacity %d of max %d, in %d samples), sold-out lag %.0f ms, %d never told; %d of %d entered after the open",
			res.Reserved, taken, res.Oversold, res.Undersold, res.LastUnitS, res.Requests, res.Seconds, res.KendallTau, res.KendallTauB, res.MaxTauB,
			res.Admitted, res.AdmissionMoments, res.MaxOutstanding, res.MaxOverCap, res.MaxOverCapacity, res.MaxCapacity, res.Samples, res.SoldOutLagMs, res.NotToldSoldOut, res.EnteredLate, res.Entered)
		b.r.Fair = append(b.r.Fair, res)
	}
	return nil
}

func classBuyers(classes []fairness.Class) int {
	n := 0
	for _, c := range classes {
		n += c.Buyers
	}
	return n
}

// fairTrace logs, every --fair-trace until the returned stop, what the
// process's Redis pool did since the last line (calls that waited for a
// connection, their mean wait, pool timeouts; connections open and idle),
// the fair API's gate refusals (BUSY, UNAVAILABLE) and the goroutines: the
// evidence of which resource a crowd exhausted. The pool is the whole
// process's (the worker's activities share it here, not in production).
func (b *benchRun) fairTrace(ctx context.Context, st *stack, api *demo.Stack) (stop func()) {
	if b.p.FairTrace <= 0 {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(b.p.FairTrace)
		defer t.Stop()
		pool, gate := *st.Backend.Redis.PoolStats(), api.API.Gate().Stats()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			p, g := *st.Backend.Redis.PoolStats(), api.API.Gate().Stats()
			waits := p.WaitCount - pool.WaitCount
			meanMs := 0.0
			if waits > 0 {
				meanMs = float64(p.WaitDurationNs-pool.WaitDurationNs) / float64(waits) / 1e6
			}
			b.logf("  trace: redis pool %d waits (mean %.1f ms), %d timeouts, %d conns (%d idle); gate busy %d, unavailable %d; %d goroutines",
				waits, meanMs, p.Timeouts-pool.Timeouts, p.TotalConns, p.IdleConns, g.Busy-gate.Busy, g.Unavailable-gate.Unavailable,
				runtime.NumGoroutine())
			pool, gate = p, g
		}
	})
	return func() { cancel(); wg.Wait() }
}
