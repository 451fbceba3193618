package contract

import (
	"time"

	"github.com/flashsale/flashsale"
)

// The reconcile run's net: unpaid orders past their deadline whose
// workflow no longer runs, closed the way the workflow would have
// (activities.Activities, net.go).
const (
	FindOverdueOrders   = "FindOverdueOrders"
	CloseStrandedOrders = "CloseStrandedOrders"
)

// FindOverdueOrdersInput asks for the PENDING_PAYMENT orders past pay_by +
// Grace.
type FindOverdueOrdersInput struct {
	Grace time.Duration `json:"grace"`
	// SKUs, when given, keeps the orders holding one of them.
	SKUs []string `json:"skus,omitempty"`
	// Limit bounds the orders looked at in one run; the next run takes
	// the rest.
	Limit int `json:"limit"`
}

// OverdueOrder is one unpaid order past its deadline and what became of
// its workflow.
type OverdueOrder struct {
	OrderID string           `json:"order_id"`
	PayBy   time.Time        `json:"pay_by"`
	Items   []flashsale.Item `json:"items"`
	// Deferred: placed on a SKU that deducts at payment; its booking goes
	// back with it.
	Deferred bool `json:"deferred,omitempty"`
	// Workflow is the workflow's status (RUNNING, TERMINATED, FAILED,
	// ... or NOT_FOUND).
	Workflow string `json:"workflow"`
	// TaskAttempt is the attempt of the running workflow's pending
	// workflow task; above 1 its tasks are failing.
	TaskAttempt int32 `json:"task_attempt,omitempty"`
}

// FindOverdueOrdersResult sorts the overdue orders by what the net can do.
type FindOverdueOrdersResult struct {
	// Stranded: the workflow is not running; nothing else will close the
	// order.
	Stranded []OverdueOrder `json:"stranded,omitempty"`
	// Stuck: the workflow runs but its workflow tasks fail (a
	// non-determinism after a deploy or a reset): no progress, for a
	// person.
	Stuck []OverdueOrder `json:"stuck,omitempty"`
	// Running: the workflow runs and makes progress (its compensation may
	// be retrying: STALLED); it closes the order itself.
	Running []OverdueOrder `json:"running,omitempty"`
}

// CloseStrandedOrdersInput names the stranded orders to close.
type CloseStrandedOrdersInput struct {
	Orders []OverdueOrder `json:"orders"`
}

// CloseStrandedOrdersResult is what closing them did.
type CloseStrandedOrdersResult struct {
	// Closed: EXPIRED by the net, units back on sale.
	Closed []string `json:"closed,omitempty"`
	// Paid: a payment received by the deadline was found and applied
	// instead (the buyer paid in time; the workflow was gone before it
	// could apply it).
	Paid []string `json:"paid,omitempty"`
	// Skipped: found running again (a reset), paid or closed meanwhile.
	Skipped []string `json:"skipped,omitempty"`
	// Released is the units put back in Redis.
	Released int64 `json:"released"`
}
