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
	queue := st.Backend.Config.TaskQueue
	sides := []bench.Round{
		func(ctx context.Context, r int) (bench.Stat, error) {
			_, w := bench.Orders(ctx, st.svc, sku, 100, fmt.Sprintf("shape-o%d", r), n, b.p.Concurrency)
			return w, nil
		},
		func(ctx context.Context, r int) (bench.Stat, error) {
			return bench.Shape(ctx, st.Backend.Temporal, queue, sku, fmt.Sprintf("%s-c1-%d", run, r), false, 100, n, b.p.Concurrency), nil
		},
		func(ctx context.Context, r int) (bench.Stat, error) {
			return bench.Shape(ctx, st.Backend.Temporal, queue, sku, fmt.Sprintf("%s-c2-%d", run, r), true, 100, n, b.p.Concurrency), nil
		},
		func(ctx context.Context, r int) (bench.Stat, error) {
			return bench.Ceiling(ctx, st.Backend.Temporal, queue, fmt.Sprintf("%s-c0-%d", run, r), n, b.p.Concurrency), nil
		},
	}
	for i, rung := range ceiling.Rungs {
		sides = append(sides, func(ctx context.Context, r int) (bench.Stat, error) {
			return bench.Shape(ctx, st.Backend.Temporal, queue, sku, fmt.Sprintf("%s-rung%d-%d", run, i, r), false, 100, n, b.p.Concurrency, rung), nil
		})
	}
	cpu := make([][]time.Duration, len(sides))
	for i := range cpu {
		cpu[i] = make([]time.Duration, len(procs))
	}
	measured := func(side int, round bench.Round) bench.Round {
		return func(ctx context.Context, r int) (bench.Stat, error) {
			c0 := procstat.CPUOf(procs)
			s, err := round(ctx, r)
			for i, c := range procstat.CPUOf(procs) {
				cpu[side][i] += c - c0[i]
			}
			return s, err
		}
	}
	b.logf("%s: %d rounds of %d whole orders, C1, C2, C0 and %d rungs from C0 to C1 each, %d callers", name, b.p.Rounds, n, len(ceiling.Rungs), b.p.Concurrency)
	for i := range sides {
		sides[i] = measured(i, sides[i])
	}
	rounds, err := bench.Interleave(ctx, "order shape: "+name, b.p.Rounds, sides...)
	if err != nil {
		return err
	}
	limits := bench.ShapeLimits{Server: name}
	for i, r := range rounds {
		limits.Sides = append(limits.Sides, bench.NewShapeSide(r, procs, cpu[i]))
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
