// Package activities holds the side effects of the order workflow: Redis
// stock reservations and MySQL order writes. Every activity is idempotent,
// because Temporal retries them after timeouts and crashes, and every
// business answer is a non-retryable application error of a stable type,
// because retrying "sold out" only burns time (contract/errors.go holds the
// one table between those types and the flashsale codes, errors.go gives
// them).
//
// The activities' names, inputs and results are in package contract, which
// the workflows import instead of this package: they run these methods by
// their registered names and never link the stores.
//
// One file per job: stock.go takes and gives back Redis units, order.go
// writes and closes the MySQL order, payment.go records money, waitlist.go
// and degraded.go the waitlist offer and the MySQL-only mode, reconcile.go
// and resync.go keep Redis in step with MySQL.
package activities

import (
	"context"
	"log/slog"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/flashsale/flashsale/activities/contract"
	"github.com/flashsale/flashsale/internal/inventory"
	"github.com/flashsale/flashsale/internal/orderdb"
	"github.com/flashsale/flashsale/internal/redisguard"
	"github.com/flashsale/flashsale/internal/requestid"
	"github.com/flashsale/flashsale/internal/sale"
)

// Activities holds the dependencies of the order activities. The worker
// registers its methods under their names (internal/app.RegisterActivities),
// which are the names the workflows run them by (package contract).
type Activities struct {
	Stock  *inventory.Store
	Orders *orderdb.Store
	// Sales holds the fair sales' queues (sale.go); SaleWorkflow's
	// activities need it, orders do not.
	Sales  *sale.Store
	Logger *slog.Logger
	// UserIDKey keys the hash of buyers' ids kept in Temporal's visibility
	// (config.Config.UserIDKey): a waitlist offer's search attributes.
	UserIDKey []byte
	// PaymentTimeout applies to orders that do not carry their own.
	PaymentTimeout time.Duration
	// Now is the clock; nil means time.Now. Tests inject a fixed clock.
	Now func() time.Time

	// Guard says whether Redis may be used; nil means always try it (an
	// outage error still degrades the order). See degraded.go.
	Guard *redisguard.Guard
	// DegradedConcurrency caps CreateOrder calls of degraded orders on
	// this worker; zero means DefaultDegradedConcurrency.
	DegradedConcurrency int
	// RequestResync asks for a SKU's Redis buckets to be re-synced from
	// MySQL (the worker signals the resync workflow). It is needed only
	// once an order has been degraded.
	RequestResync func(ctx context.Context, sku string) error
	// CancelRunningOrders signals cancel to every running order of a SKU
	// not in signalled, adds those to it, and answers how many it
	// signalled (orders.Service.CancelRunning); a void of a fair sale
	// needs it.
	CancelRunningOrders func(ctx context.Context, sku, reason string, signalled map[string]bool) (int, error)
	// CountRunningOrders counts the running order workflows holding a SKU
	// (visibility, workflows.RunningOrdersQuery): the end of a fair sale
	// waits for none.
	CountRunningOrders func(ctx context.Context, sku string) (int64, error)
	// OrderWorkflowID names an order's workflow (workflows.OrderWorkflowID):
	// the end of a fair sale compares Redis with MySQL as the reconciler
	// does, which asks whether an order's workflow still runs.
	OrderWorkflowID func(orderID string) string
	// Preflight runs the go/no-go before a sale opens
	// (internal/app.Preflight): SaleWorkflow's PreflightSale.
	Preflight func(ctx context.Context, in contract.PreflightInput) (contract.PreflightReport, error)
	// ResyncFlagTTL is how long a SKU's resync flag is cached; zero means
	// DefaultResyncFlagTTL.
	ResyncFlagTTL time.Duration

	degraded degradation
}

// DefaultPaymentTimeout applies when neither the order nor the worker sets one.
const DefaultPaymentTimeout = 15 * time.Minute

func (a *Activities) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}

func (a *Activities) logger(ctx context.Context) *slog.Logger { return activityLogger(ctx, a.Logger) }

// activityLogger is l (slog.Default when nil) with the running activity's
// workflow id, type and attempt, and the id of the API request that started
// the workflow (propagated in Temporal headers, internal/requestid).
func activityLogger(ctx context.Context, l *slog.Logger) *slog.Logger {
	if l == nil {
		l = slog.Default()
	}
	if activity.IsActivity(ctx) {
		info := activity.GetInfo(ctx)
		l = l.With("workflow_id", info.WorkflowExecution.ID, "activity", info.ActivityType.Name, "attempt", info.Attempt)
	}
	if id := requestid.FromContext(ctx); id != "" {
		l = l.With(requestid.LogKey, id)
	}
	return l
}

func orderSKUs(o orderdb.Order) []string {
	skus := make([]string, len(o.Items))
	for i, it := range o.Items {
		skus[i] = it.SKU
	}
	return skus
}
