package activities

import (
	"context"
	"errors"
	"fmt"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/activity"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/activities/contract"
	"github.com/flashsale/flashsale/internal/orderdb"
)

// The net behind every order's timer. An order's workflow closes it at its
// deadline; when the workflow is gone (terminated from the Web UI, failed,
// reset away, never started) nothing would, and its units would stay
// frozen in MySQL and held in Redis forever. The reconcile run finds such
// orders (FindOverdueOrders) and closes them through the same
// compare-and-set and release the workflow uses (CloseStrandedOrders), so
// it cannot race a live workflow: CloseOrder moves only a PENDING_PAYMENT
// order and release.lua gives each order's units back once.

// FindOverdueOrders lists the PENDING_PAYMENT orders past pay_by + grace and
// asks Temporal what became of each one's workflow. It writes nothing.
func (a *Activities) FindOverdueOrders(ctx context.Context, in contract.FindOverdueOrdersInput) (contract.FindOverdueOrdersResult, error) {
	var out contract.FindOverdueOrdersResult
	orders, err := a.Orders.PendingPastDeadline(ctx, a.now().Add(-in.Grace), in.SKUs, in.Limit)
	if err != nil {
		return out, err
	}
	for _, o := range orders {
		ov := contract.OverdueOrder{OrderID: o.OrderID, PayBy: o.PayBy, Items: o.Items, Deferred: o.Deferred}
		if ov.Workflow, ov.TaskAttempt, err = a.describeOrder(ctx, o.OrderID); err != nil {
			return out, err
		}
		switch {
		case ov.Workflow != runningStatus:
			out.Stranded = append(out.Stranded, ov)
		case ov.TaskAttempt > 1:
			out.Stuck = append(out.Stuck, ov)
		default:
			out.Running = append(out.Running, ov)
		}
		activity.RecordHeartbeat(ctx, o.OrderID)
	}
	return out, nil
}

var runningStatus = enums.WORKFLOW_EXECUTION_STATUS_RUNNING.String()

// describeOrder answers the status of the order's workflow and, while it
// runs, the attempt of its pending workflow task. Describe, not the
// visibility store, which lags.
func (a *Activities) describeOrder(ctx context.Context, orderID string) (string, int32, error) {
	if a.OrderWorkflowID == nil {
		return "", 0, errors.New("activities have no OrderWorkflowID")
	}
	d, err := activity.GetClient(ctx).DescribeWorkflow(ctx, a.OrderWorkflowID(orderID), "")
	if _, nf := errors.AsType[*serviceerror.NotFound](err); nf {
		return "NOT_FOUND", 0, nil
	}
	if err != nil {
		return "", 0, fmt.Errorf("describe workflow of order %s: %w", orderID, err)
	}
	raw := d.RawResponse
	return raw.GetWorkflowExecutionInfo().GetStatus().String(), raw.GetPendingWorkflowTask().GetAttempt(), nil
}

// CloseStrandedOrders closes each order as its workflow would have at the
// deadline: CloseOrder (EXPIRED, PAYMENT_TIMEOUT; or the payment received
// in time applied instead), then its Redis units back on sale. Retries are
// safe: CloseOrder is idempotent to EXPIRED and each order's release
// happens once. An order whose workflow runs again (a reset after the
// look) is left to it.
func (a *Activities) CloseStrandedOrders(ctx context.Context, in contract.CloseStrandedOrdersInput) (contract.CloseStrandedOrdersResult, error) {
	var out contract.CloseStrandedOrdersResult
	for _, o := range in.Orders {
		status, _, err := a.describeOrder(ctx, o.OrderID)
		if err != nil {
			return out, err
		}
		if status == runningStatus {
			out.Skipped = append(out.Skipped, o.OrderID)
			continue
		}
		release, paid, err := a.closeStranded(ctx, o.OrderID)
		if err != nil {
			return out, err
		}
		switch {
		case paid:
			out.Paid = append(out.Paid, o.OrderID)
		case !release:
			out.Skipped = append(out.Skipped, o.OrderID)
		default:
			res, err := a.ReleaseStock(ctx, contract.ReleaseStockInput{OrderID: o.OrderID, Items: o.Items, Deferred: o.Deferred})
			if err != nil {
				return out, err
			}
			out.Closed = append(out.Closed, o.OrderID)
			out.Released += res.Released
			a.logger(ctx).Warn("closed an order whose workflow is gone", "order_id", o.OrderID,
				"workflow", status, "pay_by", o.PayBy, "released", res.Released)
		}
		activity.RecordHeartbeat(ctx, o.OrderID)
	}
	return out, nil
}

// closeStranded closes one order in MySQL. It says whether its units go
// back to Redis (closed unpaid, by us or before), and whether a payment
// received in time was applied instead.
func (a *Activities) closeStranded(ctx context.Context, orderID string) (release, paid bool, err error) {
	o, err := a.Orders.CloseOrder(ctx, orderID, flashsale.StatusExpired, string(flashsale.PaymentTimeout))
	if err == nil && o.Degraded {
		// As CloseOrder's activity: the units came back to MySQL only.
		return false, false, a.requestResync(ctx, orderSKUs(o))
	}
	switch flashsale.ErrorCode(err) {
	case "":
		return true, false, nil
	case flashsale.OrderClosed:
		// Cancelled before its workflow went: the release may still be
		// owed, and an order's units cannot come back twice.
		return true, false, nil
	case flashsale.AlreadyPaid, flashsale.OrderNotFound:
		return false, false, nil
	case flashsale.PaymentReceived:
		received, ok := errors.AsType[*orderdb.PaymentReceivedError](err)
		if !ok {
			return false, false, err
		}
		r := received.Receipt
		_, err := a.Orders.ConfirmPayment(ctx, orderID, r.TransactionID, r.Amount)
		if flashsale.ErrorCode(err) == flashsale.AmountMismatch {
			// Not the order's price: not a payment of it. Closed as the
			// workflow would; the receipt stays for `starter check`.
			_, err = a.Orders.CloseOrderIgnoringReceipts(ctx, orderID, flashsale.StatusExpired, string(flashsale.PaymentTimeout))
			return err == nil, false, err
		}
		if err != nil {
			return false, false, fmt.Errorf("apply payment %s of order %s received in time: %w", r.TransactionID, orderID, err)
		}
		return false, true, nil
	}
	return false, false, fmt.Errorf("close stranded order %s: %w", orderID, err)
}
