package workflows

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/flashsale/flashsale/activities/contract"
)

// DefaultOverdueGrace is how long past its pay_by an unpaid order may stay
// open before the reconcile run's net looks at its workflow: the workflow
// closes it at pay_by, and a compensation still retrying shows STALLED a
// minute later; past two minutes an open order is overdue (the
// flashsale_orders_overdue gauge counts the same).
const DefaultOverdueGrace = 2 * time.Minute

// netBatch bounds the overdue orders one run looks at; the next run takes
// the rest.
const netBatch = 500

// netVersion is the patch that put the net into the reconcile run.
const netVersion = "reconcile-overdue-net"

// NetReport is what a run's net found and did (activities.Activities,
// net.go): orders past pay_by + grace still PENDING_PAYMENT.
type NetReport struct {
	// Closed: their workflow was gone; closed EXPIRED, units back on sale.
	Closed []string `json:"closed,omitempty"`
	// Paid: their workflow was gone with a payment received in time,
	// which was applied.
	Paid []string `json:"paid,omitempty"`
	// Stuck: their workflow runs but its tasks fail; logged at ERROR and
	// alerted (FlashsaleOrderOverdue) for a person.
	Stuck []string `json:"stuck,omitempty"`
	// Running: their workflow runs and closes them itself.
	Running []string `json:"running,omitempty"`
	// Released is the units put back in Redis.
	Released int64  `json:"released,omitempty"`
	Error    string `json:"error,omitempty"`
}

// net closes the orders whose timer is gone. A failure is reported, not
// returned: the stock reconciliation still runs and the next run retries.
func (rc *reconcile) net(ctx workflow.Context) *NetReport {
	if workflow.GetVersion(ctx, netVersion, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return nil
	}
	grace := rc.in.OverdueGrace
	if grace <= 0 {
		grace = DefaultOverdueGrace
	}
	out := &NetReport{}
	var found contract.FindOverdueOrdersResult
	err := workflow.ExecuteActivity(rc.readOptions(ctx, "find orders past their deadline"), contract.FindOverdueOrders,
		contract.FindOverdueOrdersInput{Grace: grace, SKUs: rc.in.SKUs, Limit: netBatch}).Get(ctx, &found)
	if err != nil {
		out.Error = err.Error()
		return out
	}
	for _, o := range found.Stuck {
		rc.logger.Error("order past its deadline whose workflow makes no progress", "order_id", o.OrderID,
			"pay_by", o.PayBy, "task_attempt", o.TaskAttempt)
		out.Stuck = append(out.Stuck, o.OrderID)
	}
	for _, o := range found.Running {
		out.Running = append(out.Running, o.OrderID)
	}
	if len(found.Stranded) == 0 || rc.in.DryRun {
		for _, o := range found.Stranded {
			out.Closed = append(out.Closed, o.OrderID) // would close
		}
		return out
	}
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout:    reconcileReadAttempt,
		HeartbeatTimeout:       time.Minute,
		ScheduleToCloseTimeout: 5 * time.Minute,
		RetryPolicy:            backoff(time.Second, 15*time.Second),
		Summary:                fmt.Sprintf("close %d orders whose workflow is gone", len(found.Stranded)),
	})
	var closed contract.CloseStrandedOrdersResult
	if err := workflow.ExecuteActivity(actx, contract.CloseStrandedOrders,
		contract.CloseStrandedOrdersInput{Orders: found.Stranded}).Get(ctx, &closed); err != nil {
		out.Error = err.Error()
		return out
	}
	out.Closed, out.Paid, out.Released = closed.Closed, closed.Paid, closed.Released
	if len(closed.Closed)+len(closed.Paid) > 0 {
		rc.logger.Warn("closed orders whose workflow was gone", "closed", len(closed.Closed),
			"paid", len(closed.Paid), "released", closed.Released)
	}
	return out
}
