package main

import (
	"context"
	"fmt"
	"time"

	"github.com/flashsale/flashsale/internal/procstat"
	"github.com/flashsale/flashsale/lab/bench"
)

// shapeGroups are the processes a shape round's order is charged to, in
// the table's order: the worker and API of these rounds run in this
// process, as the C2 workflows are the lab's (lab/ceiling), not the
// worker binary's; the sides' own worker and API processes idle then.
var shapeGroups = []string{"temporal", "postgres", "worker + API + client", "mariadbd", "redis-server"}

func (s *serverSide) shapeGroups() map[string]func() []int {
	g := s.groups()
	g["worker + API + client"] = g["crowd"]
	for _, k := range []string{"worker", "api", "crowd"} {
		delete(g, k)
	}
	return g
}

// serverShapes runs whole orders and C2 (bench_shape.go's rounds) on every
// side's server, b.p.Rounds rounds of b.p.OrderRound orders interleaved
// (dev whole, dev C2, prod whole, prod C2, ...), and returns each
// server's orders/s and CPU per order by process.
func (b *benchRun) serverShapes(ctx context.Context, sides []*serverSide) ([]bench.ShapeLimits, error) {
	var rounds []bench.Round
	var groups []map[string]func() []int
	for _, s := range sides {
		st, err := b.startOn(ctx, s.address, "shape-"+s.name)
		if err != nil {
			return nil, fmt.Errorf("shapes on %s: %w", s.name, err)
		}
		defer st.Close()
		run := b.run + "-" + s.name
		sku := "bench-shape-" + run
		if err := st.sku(ctx, sku, int64(2*b.p.Rounds*b.p.OrderRound+10)); err != nil {
			return nil, err
		}
		for _, r := range b.shapeSides(st, sku, run, false) {
			rounds = append(rounds, r)
			groups = append(groups, s.shapeGroups())
		}
	}
	meter := func(side int) func() []time.Duration {
		r0 := readCPU(groups[side])
		return func() []time.Duration {
			d := readCPU(groups[side]).since(r0)
			out := make([]time.Duration, len(shapeGroups))
			for j, g := range shapeGroups {
				out[j] = time.Duration(d[g] * float64(time.Second))
			}
			return out
		}
	}
	b.logf("servers: %d rounds of %d whole orders and C2 on each server, %d callers", b.p.Rounds, b.p.OrderRound, b.p.Concurrency)
	stats, spent, err := b.interleaveCPU(ctx, "servers: order shape", meter, rounds...)
	if err != nil {
		return nil, err
	}
	procs := make([]procstat.Proc, len(shapeGroups))
	for j, g := range shapeGroups {
		procs[j] = procstat.Proc{Name: g}
	}
	var out []bench.ShapeLimits
	for k, s := range sides {
		l := bench.ShapeLimits{Server: s.name + " server"}
		for i := 2 * k; i < 2*k+2; i++ {
			l.Sides = append(l.Sides, bench.NewShapeSide(stats[i], procs, spent[i]))
		}
		b.logf("servers: %s: whole orders %.1f/s (%.1f CPU ms), C2 %.1f/s (%.1f CPU ms)", s.name,
			l.Sides[0].OrdersPerSec.Median, l.Sides[0].CPUSumMs, l.Sides[1].OrdersPerSec.Median, l.Sides[1].CPUSumMs)
		out = append(out, l)
	}
	return out, nil
}
