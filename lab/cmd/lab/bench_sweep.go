package main

import (
	"context"
	"fmt"

	"github.com/flashsale/flashsale/internal/demo"
	"github.com/flashsale/flashsale/internal/orders"
	"github.com/flashsale/flashsale/lab/bench"
	"github.com/flashsale/flashsale/lab/ceiling"
)

// The sweep's grid: the worker's slots (WORKER_CONCURRENCY: activities,
// local activities and workflow tasks each) and the MySQL pool
// (MYSQL_MAX_CONNS) the defaults are chosen from.
var (
	sweepSlots = []int{16, 64, 256}
	sweepConns = []int{8, 32}
)

// sweep measures whole orders with each worker-slot count and MySQL pool
// size of the grid, every point a worker of its own on the same dev server,
// Redis and MySQL, the points interleaved round by round so the machine's
// passing load touches them all.
func (b *benchRun) sweep(ctx context.Context, st *stack) error {
	type point struct {
		slots, conns int
		svc          *orders.Service
		sku          string
		rounds       []bench.Stat
	}
	var points []*point
	for _, slots := range sweepSlots {
		for _, conns := range sweepConns {
			c := b.cfg
			c.TemporalAddress = st.Backend.Config.TemporalAddress
			c.TaskQueue = fmt.Sprintf("bench-%s-sweep-%d-%d", b.run, slots, conns)
			c.WorkerConcurrency, c.MySQLMaxConns = slots, conns
			ds, err := demo.StartStack(ctx, demo.StackOptions{Config: c, Register: ceiling.Register})
			if err != nil {
				return fmt.Errorf("sweep point %d slots, %d connections: %w", slots, conns, err)
			}
			defer ds.Close()
			p := &point{slots: slots, conns: conns, svc: orderService(ds.Backend), sku: fmt.Sprintf("bench-sweep-%s-%d-%d", b.run, slots, conns)}
			units := int64(b.p.Rounds * 2 * b.p.OrderRound)
			if err := (&stack{Stack: ds}).sku(ctx, p.sku, units); err != nil {
				return err
			}
			points = append(points, p)
		}
	}
	n := 2 * b.p.OrderRound
	b.logf("sweep: %d rounds of %d whole orders at %d callers, worker slots %v x MySQL connections %v", b.p.Rounds, n, b.p.Concurrency, sweepSlots, sweepConns)
	for r := range b.p.Rounds {
		for _, p := range points {
			_, w := bench.Orders(ctx, p.svc, p.sku, 100, fmt.Sprintf("sw%d", r), n, b.p.Concurrency)
			if w.Errors > 0 {
				return fmt.Errorf("sweep %d slots, %d connections, round %d: %d errors, first: %s", p.slots, p.conns, r+1, w.Errors, w.FirstError)
			}
			p.rounds = append(p.rounds, w)
		}
	}
	for _, p := range points {
		perSec := make([]float64, len(p.rounds))
		for i, s := range p.rounds {
			perSec[i] = s.PerSec
		}
		b.r.Sweep = append(b.r.Sweep, bench.SweepPoint{WorkerSlots: p.slots, MySQLConns: p.conns,
			OrdersPerSec: bench.SpreadOf(perSec), Whole: bench.MedianStat(p.rounds)})
	}
	return nil
}
