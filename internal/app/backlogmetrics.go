package app

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/flashsale/flashsale/internal/metrics"
	"github.com/flashsale/flashsale/internal/orderdb"
	"github.com/flashsale/flashsale/workflows"
)

// Backlog gauges: what is waiting for a person, read at scrape time from
// where it is recorded, so an alert sees the backlog itself rather than a
// counter of events a restart would lose. Every worker reports the same
// cluster-wide numbers (the rules take max).
var (
	stalledDesc = prometheus.NewDesc("flashsale_orders_stalled",
		"Running order workflows showing STALLED (compensation still retrying a minute past the deadline), from Temporal's visibility.",
		nil, nil)
	refundsDesc = prometheus.NewDesc("flashsale_payments_refund_required",
		"Payments recorded REFUND_REQUIRED in MySQL: money taken that must go back.", nil, nil)
	overdueDesc = prometheus.NewDesc("flashsale_orders_overdue",
		"Unpaid (PENDING_PAYMENT) orders in MySQL past pay_by plus the overdue grace: their workflow should have closed them.",
		nil, nil)
	overdueOrderDesc = prometheus.NewDesc("flashsale_order_overdue_seconds",
		"Seconds past pay_by plus the overdue grace of each of the oldest overdue orders, by order id (at most overdueShown of them).",
		[]string{"order_id"}, nil)
	holdsDesc = prometheus.NewDesc("flashsale_reconcile_holds_pending",
		"Confirmed stock drifts larger than reconciliation corrects by itself, held for a person (starter reconcile holds).",
		nil, nil)
	backlogErrorsDesc = prometheus.NewDesc("flashsale_backlog_read_errors",
		"Reads for the backlog gauges (flashsale_orders_stalled, flashsale_payments_refund_required, flashsale_orders_overdue) that failed or timed out in the last read.",
		nil, nil)
)

const (
	// backlogCacheFor: a visibility count and a scan of payments per scrape
	// of every worker would be wasted; the alerts wait minutes anyway.
	backlogCacheFor = 15 * time.Second
	// backlogTimeout keeps a scrape inside Prometheus's 4 s scrape timeout
	// when Temporal or MySQL is slow.
	backlogTimeout = 2 * time.Second
	// overdueShown bounds the order_id labels of
	// flashsale_order_overdue_seconds: enough for a person to start with,
	// never a series per order of a broken sale.
	overdueShown = 10
)

// newBacklogCollector is a prometheus.Collector for the backlog gauges. A
// failed read leaves its gauge out (no stale number) and counts in
// flashsale_backlog_read_errors.
func newBacklogCollector(temporal client.Client, orders *orderdb.Store) prometheus.Collector {
	c := backlog{temporal: temporal, orders: orders}
	return &metrics.Cached{Descs: []*prometheus.Desc{stalledDesc, refundsDesc, overdueDesc, overdueOrderDesc, holdsDesc, backlogErrorsDesc},
		Every: backlogCacheFor, Read: c.read}
}

// backlog reads the backlog gauges from where they are recorded.
type backlog struct {
	temporal client.Client
	orders   *orderdb.Store
}

func (c backlog) read() []prometheus.Metric {
	ctx, cancel := context.WithTimeout(context.Background(), backlogTimeout)
	defer cancel()
	var out []prometheus.Metric
	errs := 0
	if c.temporal != nil {
		resp, err := c.temporal.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{
			Query: workflows.StalledOrdersQuery(),
		})
		if err != nil {
			errs++
		} else {
			out = append(out, prometheus.MustNewConstMetric(stalledDesc, prometheus.GaugeValue, float64(resp.GetCount())))
		}
	}
	if c.orders != nil {
		n, err := c.orders.RefundsRequired(ctx)
		if err != nil {
			errs++
		} else {
			out = append(out, prometheus.MustNewConstMetric(refundsDesc, prometheus.GaugeValue, float64(n)))
		}
		out, errs = c.readOverdue(ctx, out, errs)
		if n, err := c.orders.CountPendingHolds(ctx); err != nil {
			errs++
		} else {
			out = append(out, prometheus.MustNewConstMetric(holdsDesc, prometheus.GaugeValue, float64(n)))
		}
	}
	return append(out, prometheus.MustNewConstMetric(backlogErrorsDesc, prometheus.GaugeValue, float64(errs)))
}

// readOverdue adds the overdue gauges: the orders the reconcile run's net
// closes when their workflow is gone, and alerts on when it runs but is
// stuck (FlashsaleOrderOverdue).
func (c backlog) readOverdue(ctx context.Context, out []prometheus.Metric, errs int) ([]prometheus.Metric, int) {
	since := time.Now().Add(-workflows.DefaultOverdueGrace)
	n, oldest, err := c.orders.CountPendingPastDeadline(ctx, since, overdueShown)
	if err != nil {
		return out, errs + 1
	}
	out = append(out, prometheus.MustNewConstMetric(overdueDesc, prometheus.GaugeValue, float64(n)))
	for _, o := range oldest {
		out = append(out, prometheus.MustNewConstMetric(overdueOrderDesc, prometheus.GaugeValue,
			since.Sub(o.PayBy).Seconds(), o.OrderID))
	}
	return out, errs
}
