package app

import (
	"context"
	"errors"

	"github.com/prometheus/client_golang/prometheus"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/temporal"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/activities/contract"
	"github.com/flashsale/flashsale/internal/metrics"
)

// ActivityMetrics counts what this worker's activities did, read off their
// outcomes by a worker interceptor, so neither the workflows nor the
// activities know about metrics. Orders reaching each status:
//
//   - REJECTED: ReserveStock or CreateOrder refused the order (sold out,
//     unknown SKU, per-user limit, drift);
//   - PENDING_PAYMENT: CreateOrder wrote it;
//   - PAID: ConfirmPayment took a payment that paid it (not a duplicate);
//   - EXPIRED / CANCELLED: CloseOrder closed it.
//
// and reconciliation's corrections: CorrectStock calls that moved Redis
// (kind=correct) and RestoreStock calls that rebuilt a SKU's buckets
// (kind=restore), with the units they moved.
//
// Activities are idempotent and retried, so a retry after a reply was lost
// can count twice: the counters are for rates on a dashboard, the database
// stays the record (starter check).
type ActivityMetrics struct {
	c            *prometheus.CounterVec
	corrections  *prometheus.CounterVec
	correctUnits prometheus.Counter
}

// NewActivityMetrics returns the counters; register them (ActivityMetrics
// is a prometheus.Collector) and put Interceptor on the worker.
func NewActivityMetrics() *ActivityMetrics {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: metrics.Namespace, Name: "orders_total",
		Help: "Orders this worker's activities moved to each status (REJECTED, PENDING_PAYMENT, PAID, EXPIRED, CANCELLED).",
	}, []string{"status"})
	// Every status shows from the start, so rate() has a zero to begin at.
	for _, s := range []flashsale.Status{flashsale.StatusRejected, flashsale.StatusPendingPayment,
		flashsale.StatusPaid, flashsale.StatusExpired, flashsale.StatusCancelled} {
		c.WithLabelValues(string(s))
	}
	corrections := prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: metrics.Namespace, Name: "reconcile_corrections_total",
		Help: "Reconciliation's changes to Redis stock: kind=correct (a drift moved back), restore (a SKU's lost buckets rebuilt from MySQL).",
	}, []string{"kind"})
	corrections.WithLabelValues("correct")
	corrections.WithLabelValues("restore")
	return &ActivityMetrics{c: c, corrections: corrections, correctUnits: prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: metrics.Namespace, Name: "reconcile_corrected_units_total",
		Help: "Units reconciliation's corrections moved in Redis, either way.",
	})}
}

// Describe implements prometheus.Collector.
func (o *ActivityMetrics) Describe(ch chan<- *prometheus.Desc) {
	o.c.Describe(ch)
	o.corrections.Describe(ch)
	o.correctUnits.Describe(ch)
}

// Collect implements prometheus.Collector.
func (o *ActivityMetrics) Collect(ch chan<- prometheus.Metric) {
	o.c.Collect(ch)
	o.corrections.Collect(ch)
	o.correctUnits.Collect(ch)
}

// Interceptor observes the activities' outcomes.
func (o *ActivityMetrics) Interceptor() interceptor.WorkerInterceptor {
	return &statusInterceptor{o: o}
}

type statusInterceptor struct {
	interceptor.WorkerInterceptorBase
	o *ActivityMetrics
}

func (i *statusInterceptor) InterceptActivity(ctx context.Context, next interceptor.ActivityInboundInterceptor) interceptor.ActivityInboundInterceptor {
	return &statusActivity{ActivityInboundInterceptorBase: interceptor.ActivityInboundInterceptorBase{Next: next}, o: i.o}
}

type statusActivity struct {
	interceptor.ActivityInboundInterceptorBase
	o *ActivityMetrics
}

func (a *statusActivity) ExecuteActivity(ctx context.Context, in *interceptor.ExecuteActivityInput) (any, error) {
	res, err := a.Next.ExecuteActivity(ctx, in)
	name := activity.GetInfo(ctx).ActivityType.Name
	if status := orderStatusOf(name, in.Args, res, err); status != "" {
		a.o.c.WithLabelValues(string(status)).Inc()
	}
	if kind, units := correctionOf(res, err); kind != "" {
		a.o.corrections.WithLabelValues(kind).Inc()
		a.o.correctUnits.Add(float64(units))
	}
	return res, err
}

// rejects holds the refusals that reject an order outright.
var rejects = map[flashsale.Code]bool{
	flashsale.SoldOut: true, flashsale.UnknownSKU: true, flashsale.LimitExceeded: true, flashsale.StockDrift: true,
}

// orderStatusOf is the status an activity's outcome moved its order to, or
// "" when it moved none.
func orderStatusOf(name string, args []any, res any, err error) flashsale.Status {
	if err != nil {
		// Only a business refusal of the order (not a retryable failure, not
		// a timeout) rejects it.
		if name == "ReserveStock" || name == "CreateOrder" {
			app, isApp := errors.AsType[*temporal.ApplicationError](err)
			if code, ok := contract.CodeOf(err); ok && isApp && app.NonRetryable() && rejects[code] {
				return flashsale.StatusRejected
			}
		}
		return ""
	}
	switch name {
	case "CreateOrder":
		return flashsale.StatusPendingPayment
	case "ConfirmPayment":
		if r, ok := res.(contract.ConfirmPaymentResult); ok && !r.Duplicate && r.OrderStatus == flashsale.StatusPaid {
			return flashsale.StatusPaid
		}
	case "CloseOrder":
		if len(args) == 1 {
			if in, ok := args[0].(contract.CloseOrderInput); ok && !in.Abandon {
				return in.Status
			}
		}
	}
	return ""
}

// correctionOf is the kind of change to Redis a reconciliation activity's
// outcome made, and the units it moved (either way); "" when none.
func correctionOf(res any, err error) (kind string, units int64) {
	if err != nil {
		return "", 0
	}
	switch r := res.(type) {
	case contract.CorrectStockResult:
		if r.Claimed && r.Applied != 0 {
			return "correct", max(r.Applied, -r.Applied)
		}
	case contract.RestoreStockResult:
		if r.Restored {
			return "restore", 0
		}
	}
	return "", 0
}
