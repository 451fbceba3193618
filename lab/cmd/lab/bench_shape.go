package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/flashsale/flashsale/internal/procstat"
	"github.com/flashsale/flashsale/lab/bench"
	"github.com/flashsale/flashsale/lab/ceiling"
)

// shapes measures whole orders against the limits of the order's own shape
// (C1, C2; lab/ceiling/shape.go), interleaved round by round
// on one server, and what one order of each costs every process: the dev
// server, this process (worker, API and the bench's client), MariaDB and
// Redis, when they run on this machine.
func (b *benchRun) shapes(ctx context.Context, st *stack, name, run string) error {
	sku := "bench-shape-" + run
	n := b.p.OrderRound
	if err := st.sku(ctx, sku, int64(2*b.p.Rounds*n+10)); err != nil { // whole orders and C2 take units
		return err
	}
	procs := b.procs(st)
	sides := b.shapeSides(st, sku, run, true)
	b.logf("%s: %d rounds of %d whole orders, C1, C2, C0 and %d rungs from C0 to C1 each, %d callers", name, b.p.Rounds, n, len(ceiling.Rungs), b.p.Concurrency)
	meter := func(int) func() []time.Duration {
		c0 := procstat.CPUOf(procs)
		return func() []time.Duration {
			c := procstat.CPUOf(procs)
			for i := range c {
				c[i] -= c0[i]
			}
			return c
		}
	}
	rounds, spent, err := b.interleaveCPU(ctx, "order shape: "+name, meter, sides...)
	if err != nil {
		return err
	}
	limits := bench.ShapeLimits{Server: name}
	for i, r := range rounds {
		limits.Sides = append(limits.Sides, bench.NewShapeSide(r, procs, spent[i]))
	}
	b.r.Shapes = append(b.r.Shapes, limits)
	b.r.Comparisons = append(b.r.Comparisons,
		bench.CompareRounds("order shape: "+name, rounds[0], rounds[2], "whole order vs C2, the fair limit"),
		bench.CompareRounds("order shape: "+name, rounds[0], rounds[1], "whole order vs C1"),
		bench.CompareRounds("order shape: "+name, rounds[2], rounds[1], "C2 vs C1: the price of the Redis and MySQL work"))
	b.logf("%s: whole orders %.1f/s, C1 %.1f/s, C2 %.1f/s, C0 %.1f/s", name,
		limits.Sides[0].OrdersPerSec.Median, limits.Sides[1].OrdersPerSec.Median, limits.Sides[2].OrdersPerSec.Median, limits.Sides[3].OrdersPerSec.Median)
	return nil
}

// shapeSides are st's rounds of whole orders and C2 on sku, with C1 after
// whole orders and C0 and the rungs after C2 when all is set; each round
// is b.p.OrderRound orders at b.p.Concurrency callers.
func (b *benchRun) shapeSides(st *stack, sku, run string, all bool) []bench.Round {
	n := b.p.OrderRound
	queue := st.Backend.Config.TaskQueue
	whole := func(ctx context.Context, r int) (bench.Stat, error) {
		_, w := bench.Orders(ctx, st.svc, sku, 100, fmt.Sprintf("shape-o%d", r), n, b.p.Concurrency)
		return w, nil
	}
	c2 := func(ctx context.Context, r int) (bench.Stat, error) {
		return bench.Shape(ctx, st.Backend.Temporal, queue, sku, fmt.Sprintf("%s-c2-%d", run, r), true, 100, n, b.p.Concurrency), nil
	}
	if !all {
		return []bench.Round{whole, c2}
	}
	sides := []bench.Round{
		whole,
		func(ctx context.Context, r int) (bench.Stat, error) {
			return bench.Shape(ctx, st.Backend.Temporal, queue, sku, fmt.Sprintf("%s-c1-%d", run, r), false, 100, n, b.p.Concurrency), nil
		},
		c2,
		func(ctx context.Context, r int) (bench.Stat, error) {
			return bench.Ceiling(ctx, st.Backend.Temporal, queue, fmt.Sprintf("%s-c0-%d", run, r), n, b.p.Concurrency), nil
		},
	}
	for i, rung := range ceiling.Rungs {
		sides = append(sides, func(ctx context.Context, r int) (bench.Stat, error) {
			return bench.Shape(ctx, st.Backend.Temporal, queue, sku, fmt.Sprintf("%s-rung%d-%d", run, i, r), false, 100, n, b.p.Concurrency, rung), nil
		})
	}
	return sides
}

// interleaveCPU runs the sides' b.p.Rounds rounds interleaved
// (bench.Interleave) and returns, beside their Stats, the CPU each side
// spent over its rounds, one figure per process: meter starts a reading
// of side's processes before its round, and what it returns ends it.
func (b *benchRun) interleaveCPU(ctx context.Context, section string, meter func(side int) func() []time.Duration, sides ...bench.Round) ([][]bench.Stat, [][]time.Duration, error) {
	spent := make([][]time.Duration, len(sides))
	measured := make([]bench.Round, len(sides))
	for i, round := range sides {
		measured[i] = func(ctx context.Context, r int) (bench.Stat, error) {
			read := meter(i)
			s, err := round(ctx, r)
			d := read()
			if spent[i] == nil {
				spent[i] = make([]time.Duration, len(d))
			}
			for j := range d {
				spent[i][j] += d[j]
			}
			return s, err
		}
	}
	rounds, err := bench.Interleave(ctx, section, b.p.Rounds, measured...)
	return rounds, spent, err
}

// procs are the processes whose CPU an order costs: the dev server, this
// process, and MariaDB and Redis when they run here (found by name; Redis
// by the port of REDIS_ADDR, beside the cluster's nodes).
func (b *benchRun) procs(st *stack) []procstat.Proc {
	out := []procstat.Proc{{Name: "Temporal server", PID: st.temporal.PID()}, {Name: "worker + API + client", PID: os.Getpid()}}
	if pid, ok := procstat.FindPID("mariadbd"); ok {
		out = append(out, procstat.Proc{Name: "mariadbd", PID: pid})
	}
	addr := st.Backend.Config.RedisAddrs()[0]
	if i := strings.LastIndexByte(addr, ':'); i >= 0 {
		if pid, ok := procstat.FindPID("redis-server", addr[i:]); ok {
			out = append(out, procstat.Proc{Name: "redis-server", PID: pid})
		}
	}
	return out
}
