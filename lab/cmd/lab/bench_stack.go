package main

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/internal/backend"
	"github.com/flashsale/flashsale/internal/demo"
	"github.com/flashsale/flashsale/internal/devstack"
	"github.com/flashsale/flashsale/internal/metrics"
	"github.com/flashsale/flashsale/internal/orders"
	"github.com/flashsale/flashsale/internal/procstat"
	"github.com/flashsale/flashsale/lab/ceiling"
)

// stack is a dev server we started and the flash-sale stack on it.
type stack struct {
	*demo.Stack
	temporal *devstack.Temporal
	svc      *orders.Service
	// sdk holds the Temporal SDK's metrics of the worker and the client
	// (the sale's diagnosis reads them).
	sdk *prometheus.Registry
}

func (s *stack) Close() {
	s.Stack.Close()
	if s.temporal != nil {
		_ = s.temporal.Stop()
	}
}

// cpu is the dev server's CPU time so far.
func (s *stack) cpu() time.Duration {
	d, err := procstat.ProcessCPU(s.temporal.PID())
	if err != nil {
		return 0
	}
	return d
}

// start runs a dev server with the given dynamic config (nil: the
// adopted defaults) and the worker and API on it, on a task queue of its
// own.
func (b *benchRun) start(ctx context.Context, tag, dbFile string, dyn []string) (*stack, error) {
	t, err := devstack.StartTemporal(ctx, devstack.TemporalOptions{DBFile: dbFile, DynamicConfig: dyn})
	if err != nil {
		return nil, err
	}
	st, err := b.startOn(ctx, t.Address(), tag)
	if err != nil {
		_ = t.Stop()
		return nil, err
	}
	st.temporal = t
	return st, nil
}

// startOn runs the worker (with the ceiling workflows) and the API in
// this process on the Temporal server at address, on a task queue of
// its own; the server is not the stack's to stop.
func (b *benchRun) startOn(ctx context.Context, address, tag string) (*stack, error) {
	c := b.cfg
	c.TemporalAddress = address
	c.TaskQueue = "bench-" + b.run + "-" + tag
	reg := prometheus.NewRegistry()
	h, err := metrics.TemporalHandler(reg, nil)
	if err != nil {
		return nil, err
	}
	st, err := demo.StartStack(ctx, demo.StackOptions{Config: c, Backend: []backend.Option{backend.WithTemporalMetrics(h)}, Register: ceiling.Register})
	if err != nil {
		return nil, err
	}
	return &stack{Stack: st, svc: orderService(st.Backend), sdk: reg}, nil
}

// sku creates a SKU with stock for the whole run in MySQL and Redis.
func (s *stack) sku(ctx context.Context, id string, units int64) error {
	if _, err := s.Backend.Orders.PutSKU(ctx, flashsale.SKU{ID: id, Total: units, Price: 100, Buckets: 16, PerUserLimit: 1}); err != nil {
		return fmt.Errorf("sku %s: %w", id, err)
	}
	if _, err := s.Backend.Stock.Preheat(ctx, id, units, 16); err != nil {
		return fmt.Errorf("preheat %s: %w", id, err)
	}
	return nil
}
