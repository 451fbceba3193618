package backend

import (
	"context"
	"errors"

	"github.com/prometheus/client_golang/prometheus"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/temporal"

	"github.com/flashsale/flashsale/activities"
	"github.com/flashsale/flashsale/internal/metrics"
	"github.com/flashsale/flashsale/internal/orderdb"
	"github.com/flashsale/flashsale/workflows"
)

// OrderStatusCounter counts the orders this worker's activities moved to
// each status, read off the activities' outcomes by a worker interceptor,
// so neither the workflow nor the activities know about metrics:
//
//   - REJECTED: ReserveStock or CreateOrder refused the order (sold out,
//     unknown SKU, per-user limit, drift);
//   - PENDING_PAYMENT: CreateOrder wrote it;
//   - PAID: ConfirmPayment took a payment that paid it (not a duplicate);
//   - EXPIRED / CANCELLED: CloseOrder closed it.
//
// Activities are idempotent and retried, so a retry after a reply was lost
// can count an order twice: the counter is for rates on a dashboard, the
// database stays the record (starter check).
type OrderStatusCounter struct {
	c *prometheus.CounterVec
}

// NewOrderStatusCounter returns the counter; register it (it is a
// prometheus.Collector) and put Interceptor on the worker.
func NewOrderStatusCounter() *OrderStatusCounter {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: metrics.Namespace, Name: "orders_total",
		Help: "Orders this worker's activities moved to each status (REJECTED, PENDING_PAYMENT, PAID, EXPIRED, CANCELLED).",
	}, []string{"status"})
	// Every status shows from the start, so rate() has a zero to begin at.
	for _, s := range []workflows.Status{workflows.StatusRejected, workflows.StatusPendingPayment,
		workflows.StatusPaid, workflows.StatusExpired, workflows.StatusCancelled} {
		c.WithLabelValues(string(s))
	}
	return &OrderStatusCounter{c: c}
}

// Describe implements prometheus.Collector.
func (o *OrderStatusCounter) Describe(ch chan<- *prometheus.Desc) { o.c.Describe(ch) }

// Collect implements prometheus.Collector.
func (o *OrderStatusCounter) Collect(ch chan<- prometheus.Metric) { o.c.Collect(ch) }

// Interceptor observes the order activities' outcomes.
func (o *OrderStatusCounter) Interceptor() interceptor.WorkerInterceptor {
	return &statusInterceptor{o: o}
}

type statusInterceptor struct {
	interceptor.WorkerInterceptorBase
	o *OrderStatusCounter
}

func (i *statusInterceptor) InterceptActivity(ctx context.Context, next interceptor.ActivityInboundInterceptor) interceptor.ActivityInboundInterceptor {
	return &statusActivity{ActivityInboundInterceptorBase: interceptor.ActivityInboundInterceptorBase{Next: next}, o: i.o}
}

type statusActivity struct {
	interceptor.ActivityInboundInterceptorBase
	o *OrderStatusCounter
}

func (a *statusActivity) ExecuteActivity(ctx context.Context, in *interceptor.ExecuteActivityInput) (any, error) {
	res, err := a.Next.ExecuteActivity(ctx, in)
	if status := orderStatusOf(activity.GetInfo(ctx).ActivityType.Name, in.Args, res, err); status != "" {
		a.o.c.WithLabelValues(string(status)).Inc()
	}
	return res, err
}

// orderStatusOf is the status an activity's outcome moved its order to, or
// "" when it moved none.
func orderStatusOf(name string, args []any, res any, err error) workflows.Status {
	if err != nil {
		var app *temporal.ApplicationError
		if (name == "ReserveStock" || name == "CreateOrder") && errors.As(err, &app) && app.NonRetryable() {
			switch app.Type() {
			case activities.ErrTypeSoldOut, activities.ErrTypeUnknownSKU, activities.ErrTypeLimitExceeded, activities.ErrTypeStockDrift:
				return workflows.StatusRejected
			}
		}
		return ""
	}
	switch name {
	case "CreateOrder":
		return workflows.StatusPendingPayment
	case "ConfirmPayment":
		if r, ok := res.(activities.ConfirmPaymentResult); ok && !r.Duplicate && r.OrderStatus == orderdb.StatusPaid {
			return workflows.StatusPaid
		}
	case "CloseOrder":
		if len(args) == 1 {
			if in, ok := args[0].(activities.CloseOrderInput); ok && !in.Abandon {
				return workflows.Status(in.Status)
			}
		}
	}
	return ""
}
