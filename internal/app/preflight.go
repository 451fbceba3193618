package app

import (
	"context"
	"errors"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/flashsale/flashsale/activities"
	"github.com/flashsale/flashsale/activities/contract"
	"github.com/flashsale/flashsale/internal/backend"
	"github.com/flashsale/flashsale/workflows"
)

// The go/no-go before a sale opens (docs/sale-day.md, "Go/no-go"):
// `starter preflight` runs it, and SaleWorkflow runs it just before its
// open (PreflightSale), opening PAUSED when a check fails.

// The capacity model's unit costs (docs/capacity.md): an API answer costs
// up to 42 µs of CPU and a core is planned at 70% use, so one core answers
// 1,000,000 x 0.70 / 42 = 16,666 requests/s; a Redis master core takes
// about 35,000 deducts/s, planned at 50%: 17,500 per bucket's slot.
const (
	apiAnswerMicros      = 42
	apiUtilizationPct    = 70
	bucketDeducts        = 17500
	preflightPollerFresh = time.Minute
)

// PreflightFailures counts the sales whose go/no-go failed before their
// open (each opened PAUSED): the FlashsaleSalePreflightFailed alert.
var PreflightFailures = prometheus.NewCounter(prometheus.CounterOpts{
	Name: "flashsale_sale_preflight_failed_total",
	Help: "Sales whose go/no-go failed just before their open: each opened PAUSED, its failing checks in its view.",
})

// Preflight returns the go/no-go's checks on b: for every SKU Redis and
// MySQL agree; the reconcile Schedule exists; workers poll the task
// queue; the search attributes are registered; Redis will not evict; and,
// given an expected peak, the buckets and the API instances' cores match
// it by the capacity model. A check that cannot be made fails, saying
// why; it returns no error.
func Preflight(b *backend.Backend) func(context.Context, contract.PreflightInput) (contract.PreflightReport, error) {
	return func(ctx context.Context, in contract.PreflightInput) (contract.PreflightReport, error) {
		var rep contract.PreflightReport
		add := func(name, ok string, err error) {
			c := contract.PreflightCheck{Name: name, OK: err == nil, Detail: ok}
			if err != nil {
				c.Detail = err.Error()
				rep.Failed = append(rep.Failed, name)
			}
			rep.Checks = append(rep.Checks, c)
		}
		stock(ctx, b, in.SKUs, add)
		add("reconcile_schedule", "the reconcile Schedule exists", scheduled(ctx, b, in.SKUs))
		add("workers", "workers poll "+b.Config.TaskQueue, polling(ctx, b))
		add("search_attributes", "registered", workflows.CheckSearchAttributes(ctx, b.Temporal, b.Config.TemporalNamespace))
		add("redis_noeviction", "maxmemory-policy noeviction", b.CheckEviction(ctx))
		if in.ExpectedPeak > 0 {
			ok, err := capacity(ctx, b, in)
			add("capacity", ok, err)
		}
		if len(rep.Failed) > 0 && in.Hold {
			PreflightFailures.Inc()
		}
		return rep, nil
	}
}

// stock adds a check per SKU: Redis and MySQL agree as the reconciler sees
// them (CheckSaleStock's rule).
func stock(ctx context.Context, b *backend.Backend, skus []string, add func(string, string, error)) {
	r := &activities.Reconciler{Stock: b.Stock, Orders: b.Orders, Logger: b.Logger, Temporal: b.Temporal,
		OrderWorkflowID: workflows.OrderWorkflowID}
	res, err := r.ObserveStock(ctx, contract.ObserveStockInput{SKUs: skus})
	if err != nil {
		for _, sku := range skus {
			add("stock:"+sku, "", fmt.Errorf("not compared: %w", err))
		}
		return
	}
	for _, o := range res.Observations {
		var err error
		switch {
		case o.UnknownSKU:
			err = errors.New("unknown sku")
		case o.Ended:
			err = errors.New("its last sale ended: preheat it")
		case o.Missing, o.Torn, o.Drift != 0, len(o.NegativeBuckets) > 0:
			err = fmt.Errorf("mysql and redis disagree (db available %d, redis %d, in flight %d, drift %d, missing %t, torn %t): "+
				"`starter reconcile now --sku %s` or `starter sku preheat --sku %s`",
				o.DBAvailable, o.RedisUnits, o.InFlight, o.Drift, o.Missing, o.Torn, o.SKU, o.SKU)
		}
		add("stock:"+o.SKU, fmt.Sprintf("redis and mysql agree: %d available", o.DBAvailable), err)
	}
}

// scheduled fails unless a reconcile Schedule covers every SKU: the one of
// every SKU, or each SKU's own.
func scheduled(ctx context.Context, b *backend.Backend, skus []string) error {
	exists := func(id string) error {
		_, err := b.Temporal.ScheduleClient().GetHandle(ctx, id).Describe(ctx)
		return err
	}
	err := exists(workflows.ReconcileScheduleID(""))
	if err == nil {
		return nil
	}
	if len(skus) == 0 {
		return fmt.Errorf("no reconcile Schedule (%w): run `starter reconcile schedule --every 1m`", err)
	}
	for _, sku := range skus {
		if err := exists(workflows.ReconcileScheduleID(sku)); err != nil {
			return fmt.Errorf("no reconcile Schedule covers %s (%w): run `starter reconcile schedule --every 1m`", sku, err)
		}
	}
	return nil
}

// polling fails unless a worker polled both the workflow and the activity
// tasks of the task queue within preflightPollerFresh.
func polling(ctx context.Context, b *backend.Backend) error {
	for _, typ := range []enumspb.TaskQueueType{enumspb.TASK_QUEUE_TYPE_WORKFLOW, enumspb.TASK_QUEUE_TYPE_ACTIVITY} {
		resp, err := b.Temporal.DescribeTaskQueue(ctx, b.Config.TaskQueue, typ)
		if err != nil {
			return fmt.Errorf("describe task queue %s: %w", b.Config.TaskQueue, err)
		}
		fresh := 0
		for _, p := range resp.GetPollers() {
			if time.Since(p.GetLastAccessTime().AsTime()) < preflightPollerFresh {
				fresh++
			}
		}
		if fresh == 0 {
			return fmt.Errorf("no worker polls the %s tasks of %s: start the workers", typ, b.Config.TaskQueue)
		}
	}
	return nil
}

// capacity sizes the sale by docs/capacity.md: the live API instances'
// cores must answer the peak (cores >= peak x 42 µs / 0.7), and each SKU's
// buckets must spread it over Redis (buckets >= peak / (35,000 x 0.5), the
// conservative end: every request reaching Redis).
func capacity(ctx context.Context, b *backend.Backend, in contract.PreflightInput) (string, error) {
	apis, cores, err := backend.LiveAPIs(ctx, b.Redis)
	if err != nil {
		return "", err
	}
	peak := in.ExpectedPeak
	needCores := int(ceilDiv(peak*apiAnswerMicros*100, 1_000_000*apiUtilizationPct))
	needBuckets := int(max(1, ceilDiv(peak, bucketDeducts)))
	var errs []error
	if cores < needCores {
		errs = append(errs, fmt.Errorf("%d API instances with %d cores answer fewer than %d requests/s: %d cores needed (docs/capacity.md)",
			apis, cores, in.ExpectedPeak, needCores))
	}
	for _, sku := range in.SKUs {
		inv, err := b.Orders.Inventory(ctx, sku)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", sku, err))
			continue
		}
		if inv.Buckets < needBuckets {
			errs = append(errs, fmt.Errorf("%s has %d buckets, %d needed for %d requests/s: `starter buckets --sku %s --buckets %d`",
				sku, inv.Buckets, needBuckets, in.ExpectedPeak, sku, needBuckets))
		}
	}
	return fmt.Sprintf("%d API instances, %d cores (%d needed); %d buckets needed", apis, cores, needCores, needBuckets), errors.Join(errs...)
}

// EnsureReconcileSchedule creates the reconcile Schedule of every SKU on
// b's task queue, every `every`, unless one exists (`starter reconcile
// schedule` creates or updates it for operators). The demo's stack runs
// it; a test harness creates it paused, for the go/no-go to find.
func EnsureReconcileSchedule(ctx context.Context, b *backend.Backend, every time.Duration, paused bool) error {
	id := workflows.ReconcileScheduleID("")
	_, err := b.Temporal.ScheduleClient().Create(ctx, client.ScheduleOptions{
		ID: id, Paused: paused,
		Spec: client.ScheduleSpec{Intervals: []client.ScheduleIntervalSpec{{Every: every}}},
		Action: &client.ScheduleWorkflowAction{ID: workflows.ReconcileWorkflowID(""), Workflow: workflows.ReconcileWorkflow,
			Args: []any{workflows.ReconcileInput{}}, TaskQueue: b.Config.TaskQueue, WorkflowExecutionTimeout: time.Hour},
		Overlap: enumspb.SCHEDULE_OVERLAP_POLICY_SKIP,
		Note:    "flashsale: bring Redis stock in step with MySQL",
	})
	if err != nil && !errors.Is(err, temporal.ErrScheduleAlreadyRunning) {
		return fmt.Errorf("create schedule %s: %w", id, err)
	}
	return nil
}

func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }
