package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/flashsale/flashsale/internal/devstack"
	"github.com/flashsale/flashsale/lab/bench"
	"github.com/flashsale/flashsale/workflows"
)

// settings measures each candidate server setting, and all of them
// together, against the base flags: two fresh in-memory dev servers side by
// side, whole orders on each in interleaved rounds.
func (b *benchRun) settings(ctx context.Context) error {
	type variant struct {
		tuning  devstack.Tuning
		adopted bool
	}
	var vs []variant
	var all devstack.Tuning
	all.Name = "all four together"
	allAdopted := true
	for _, t := range devstack.Tunings {
		vs = append(vs, variant{t, t.Adopted})
		all.Values = append(all.Values, t.Values...)
		allAdopted = allAdopted && t.Adopted
	}
	all.Why = "the bundle the dev servers run with when every setting is adopted"
	vs = append(vs, variant{all, allAdopted})
	for i, v := range vs {
		b.logf("setting A/B %d/%d: %s (%s)", i+1, len(vs), v.tuning.Name, strings.Join(v.tuning.Values, " "))
		res, err := b.setting(ctx, i, v.tuning)
		if err != nil {
			return fmt.Errorf("setting %s: %w", v.tuning.Name, err)
		}
		res.Adopted = v.adopted
		b.r.Settings = append(b.r.Settings, res)
	}
	return nil
}

func (b *benchRun) setting(ctx context.Context, i int, t devstack.Tuning) (bench.SettingResult, error) {
	// One after the other: two dev servers starting at once can pick the
	// same free port for their internal services.
	var with, without *stack
	with, errW := b.start(ctx, fmt.Sprintf("set%d-with", i), "", devstack.WithTunings(t))
	var errO error
	if errW == nil {
		without, errO = b.start(ctx, fmt.Sprintf("set%d-without", i), "", devstack.WithTunings())
	}
	defer func() {
		for _, s := range []*stack{with, without} {
			if s != nil {
				s.Close()
			}
		}
	}()
	if err := errors.Join(errW, errO); err != nil {
		return bench.SettingResult{}, err
	}
	// A SKU per side: the two servers share MySQL and Redis, and their
	// orders must not meet there.
	skuWith, skuWithout := fmt.Sprintf("bench-set-%s-%d-w", b.run, i), fmt.Sprintf("bench-set-%s-%d-o", b.run, i)
	units := int64(b.p.Rounds*b.p.SettingRound + 100)
	for _, side := range []struct {
		s   *stack
		sku string
	}{{with, skuWith}, {without, skuWithout}} {
		if err := side.s.sku(ctx, side.sku, units); err != nil {
			return bench.SettingResult{}, err
		}
		// The first workflows on a fresh server and worker pay for caches
		// and connections; neither side's rounds should.
		if _, w := bench.Orders(ctx, side.s.svc, side.sku, 100, "warm", 10, 4); w.Errors > 0 {
			return bench.SettingResult{}, fmt.Errorf("warm-up: %s", w.FirstError)
		}
	}
	round := func(s *stack, sku, side string) bench.Round {
		return func(ctx context.Context, n int) (bench.Stat, error) {
			_, whole := bench.Orders(ctx, s.svc, sku, 100, fmt.Sprintf("%s%d", side, n), b.p.SettingRound, b.p.Concurrency)
			return whole, nil
		}
	}
	c, err := bench.Paired(ctx, "setting: "+t.Name, b.p.Rounds, round(with, skuWith, "w"), round(without, skuWithout, "o"), "")
	if err != nil {
		return bench.SettingResult{}, err
	}
	res := bench.SettingResult{
		Name: t.Name, Values: t.Values, Why: t.Why, Server: "dev server in memory",
		WithPerS: c.Measured.PerSec, WithoutPerS: c.Against.PerSec, WithP99ms: c.Measured.P99ms, WithoutP99: c.Against.P99ms,
		Ratio: *c.RatioSpread, P99Ratio: *c.P99Ratio, Rounds: c.Rounds,
	}
	// One paid order's cost on each side (each side's first order of its
	// first round): the settings that save work show it here, the others
	// only in time.
	for _, side := range []struct {
		s      *stack
		id     string
		tr, ev *int64
	}{{with, skuWith + "-w0-0", &res.WithTransitions, &res.WithEvents}, {without, skuWithout + "-o0-0", &res.WithoutTransitions, &res.WithoutEvents}} {
		cost, err := bench.DescribeCost(ctx, side.s.Backend.Temporal, workflows.OrderWorkflowID(side.id))
		if err != nil {
			return bench.SettingResult{}, err
		}
		*side.tr, *side.ev = cost.Transitions, cost.Events
	}
	b.logf("  orders/s with %.1f, without %.1f: ratio %s, p99 ratio %s", res.WithPerS, res.WithoutPerS, res.Ratio, res.P99Ratio)
	return res, nil
}

// server measures one dev server with the adopted settings: the paths'
// cost, whole orders and the unloaded answer against the ceiling, and on
// the first (in memory) the edges and the flash sale.
func (b *benchRun) server(ctx context.Context, i int, name, dbFile string) error {
	b.logf("starting %s", name)
	st, err := b.start(ctx, fmt.Sprint("main", i), dbFile, nil)
	if err != nil {
		return err
	}
	defer func() {
		st.Close()
		if dbFile != "" {
			_ = os.Remove(dbFile)
		}
	}()
	run := fmt.Sprintf("%s%d", b.run, i)
	sku, soldOut := "bench-orders-"+run, "bench-rejected-"+run
	need := int64(b.p.Rounds*(b.p.OrderRound+b.p.IdleRound+b.p.OrderRound/2) + 5*b.p.PathOrders + 100)
	if err := st.sku(ctx, sku, need); err != nil {
		return err
	}
	if err := st.sku(ctx, soldOut, 0); err != nil {
		return err
	}
	if _, w := bench.Orders(ctx, st.svc, sku, 100, "warm", 10, 4); w.Errors > 0 {
		return fmt.Errorf("%s warm-up: %s", name, w.FirstError)
	}
	switch b.p.Only {
	case "sale":
		return b.sale(ctx, st)
	case "fair":
		return b.fair(ctx, st)
	}

	b.logf("%s: %d orders down each path (paid, expired, cancelled, rejected) and %d ceiling workflows", name, b.p.PathOrders, b.p.PathOrders)
	paths, err := bench.OrderPaths(ctx, st.svc, bench.PathsOptions{
		Server: name, SKU: sku, SoldOutSKU: soldOut, Amount: 100, Run: run, PerPath: b.p.PathOrders,
		ExpireAfter: b.p.ExpireAfter, Queue: st.Backend.Config.TaskQueue,
	})
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	b.r.Paths = append(b.r.Paths, paths...)

	// One caller: the answer's latency without queueing.
	b.logf("%s: %d rounds of %d orders and ceilings, one caller", name, b.p.Rounds, b.p.IdleRound)
	idle, err := bench.Paired(ctx, "temporal: "+name,
		b.p.Rounds,
		func(ctx context.Context, n int) (bench.Stat, error) {
			r, w := bench.Orders(ctx, st.svc, sku, 100, fmt.Sprintf("idle%d", n), b.p.IdleRound, 1)
			r.Name += ", one caller"
			if w.Errors > 0 {
				return w, nil
			}
			return r, nil
		},
		func(ctx context.Context, n int) (bench.Stat, error) {
			s := bench.Ceiling(ctx, st.Backend.Temporal, st.Backend.Config.TaskQueue, fmt.Sprintf("%s-idle%d", run, n), b.p.IdleRound, 1)
			s.Name += ", one caller"
			return s, nil
		}, "reservation answer vs the cheapest Update-with-Start, unloaded; the ratio compares the two latencies' rates")
	if err != nil {
		return err
	}
	b.r.Comparisons = append(b.r.Comparisons, idle)

	b.logf("%s: %d rounds of %d whole orders against as many ceiling workflows, %d callers", name, b.p.Rounds, b.p.OrderRound, b.p.Concurrency)
	var reserves, ceils []bench.Stat
	var cpuOrders, cpuCeil time.Duration
	var nOrders, nCeil int64
	whole, err := bench.Paired(ctx, "temporal: "+name, b.p.Rounds,
		func(ctx context.Context, n int) (bench.Stat, error) {
			c0 := st.cpu()
			r, w := bench.Orders(ctx, st.svc, sku, 100, fmt.Sprintf("r%d", n), b.p.OrderRound, b.p.Concurrency)
			cpuOrders += st.cpu() - c0
			nOrders += w.Ops
			reserves = append(reserves, r)
			return w, nil
		},
		func(ctx context.Context, n int) (bench.Stat, error) {
			c0 := st.cpu()
			s := bench.Ceiling(ctx, st.Backend.Temporal, st.Backend.Config.TaskQueue, fmt.Sprintf("%s-r%d", run, n), b.p.OrderRound, b.p.Concurrency)
			cpuCeil += st.cpu() - c0
			nCeil += s.Ops
			ceils = append(ceils, s)
			return s, nil
		}, "whole order vs the cheapest Update-with-Start")
	if err != nil {
		return err
	}
	b.r.Comparisons = append(b.r.Comparisons,
		bench.CompareRounds("temporal: "+name, reserves, ceils, "reservation answer vs the cheapest Update-with-Start"), whole)
	b.r.Servers = append(b.r.Servers, bench.ServerRate{
		Server: name, OrdersPerS: whole.Measured.PerSec, CeilingPerS: whole.Against.PerSec,
		Ratio: whole.Ratio, RatioSpread: *whole.RatioSpread, Rounds: whole.Rounds,
	})
	cost := bench.CostPerOrder{Server: name, ClientRPCs: 2, MeasuredOrders: nOrders,
		ServerCPUms:  float64(cpuOrders.Microseconds()) / 1000 / float64(max(nOrders, 1)),
		CeilingCPUms: float64(cpuCeil.Microseconds()) / 1000 / float64(max(nCeil, 1))}
	for _, pc := range paths {
		switch pc.Path {
		case bench.PathPaid:
			cost.HistoryEvents, cost.Transitions = pc.Events, pc.Transitions
		case bench.PathCeiling:
			cost.CeilingEvents, cost.CeilingTransitions = pc.Events, pc.Transitions
		}
	}
	b.r.Costs = append(b.r.Costs, cost)
	b.logf("%s: orders/s %.1f, ceiling/s %.1f, ratio %s", name, whole.Measured.PerSec, whole.Against.PerSec, whole.RatioSpread)

	if err := b.shapes(ctx, st, name, run); err != nil {
		return err
	}

	if i != 0 {
		return nil
	}
	if err := b.baseline(ctx, st, sku); err != nil {
		return err
	}
	if err := b.edges(ctx, st); err != nil {
		return err
	}
	if b.p.Sweep {
		if err := b.sweep(ctx, st); err != nil {
			return err
		}
	}
	if err := b.sale(ctx, st); err != nil {
		return err
	}
	return b.fair(ctx, st)
}
