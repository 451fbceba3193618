package activities

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/activities/contract"
	"github.com/flashsale/flashsale/internal/orderdb"
)

// CreateOrder writes the order and freezes its units in one MySQL
// transaction; the database is the final guard against overselling. It is
// idempotent by order id.
//
// When the user would exceed the SKU's per-user limit, the order is refused
// with LimitExceeded and nothing is written; the Redis units are real and
// the workflow gives them back.
//
// When MySQL refuses (available < qty although Redis said yes), Redis holds
// units that do not exist: the order is refused with StockDrift, the drift
// is logged and counted in Redis for reconciliation, and the workflow must
// NOT put those units back into Redis.
func (a *Activities) CreateOrder(ctx context.Context, in contract.CreateOrderInput) (contract.CreateOrderResult, error) {
	timeout := in.PaymentTimeout
	if timeout <= 0 {
		timeout = a.PaymentTimeout
	}
	if timeout <= 0 {
		timeout = DefaultPaymentTimeout
	}
	// A retry of an order that was written returns the stored pay_by, so
	// the deadline never moves.
	payBy := a.now().Add(timeout).UTC().Truncate(time.Millisecond)
	if in.Degraded {
		if err := a.slots().Acquire(ctx, 1); err != nil {
			return contract.CreateOrderResult{}, fmt.Errorf("create order %s: wait for a degraded slot: %w", in.OrderID, err)
		}
		defer a.slots().Release(1)
	}
	no := orderdb.NewOrder{Order: in.Order, PayBy: payBy, Degraded: in.Degraded, Buckets: in.Buckets, Deferred: in.Deferred}
	if in.PaymentTimeout <= 0 {
		// No window of the order's own: a SKU's window, if it has one,
		// replaces the worker's (flashsale.Terms).
		no.WindowFrom = a.now()
	}
	o, err := a.Orders.CreateOrder(ctx, no)
	if err == nil {
		// Checked first: building the logger costs allocations per order,
		// and a flood runs at info.
		if a.Logger != nil && a.Logger.Enabled(ctx, slog.LevelDebug) {
			a.logger(ctx).Debug("order created", "order_id", in.OrderID, "amount", o.Amount, "degraded", o.Degraded)
		}
		if o.Degraded {
			// Also on a retry: the first attempt may have committed and
			// died before asking.
			if err := a.requestResync(ctx, orderSKUs(o)); err != nil {
				return contract.CreateOrderResult{}, err
			}
		}
		return contract.CreateOrderResult{Amount: o.Amount, PayBy: o.PayBy, LateCapture: o.LateCapture,
			ReleaseOnFailed: o.ReleaseOnFailed}, nil
	}
	op := "create order " + in.OrderID
	switch code := flashsale.ErrorCode(err); {
	case code == flashsale.StockDrift && in.Degraded:
		// Nothing was taken from Redis, so nothing drifted: MySQL simply
		// has no units left.
		return contract.CreateOrderResult{}, refuseAs(flashsale.SoldOut, op, err)
	case code == flashsale.StockDrift:
		drifted, derr := a.findDrift(ctx, in)
		if derr != nil {
			return contract.CreateOrderResult{}, derr
		}
		return contract.CreateOrderResult{}, refuse(op, err, contract.StockDriftDetails{DriftedSKUs: drifted})
	case code == flashsale.UnknownSKU, code == flashsale.LimitExceeded, code == flashsale.OrderIDConflict,
		code == flashsale.Invalid, code == flashsale.Permanent,
		// The SKU's fair sale ended: nothing is sold after it.
		code == flashsale.SoldOut:
		return contract.CreateOrderResult{}, refuse(op, err)
	default:
		return contract.CreateOrderResult{}, fmt.Errorf("%s: %w", op, err)
	}
}

// findDrift names the items MySQL cannot cover and records the drift. The
// transaction rolled back, so re-reading the rows tells which item was short.
func (a *Activities) findDrift(ctx context.Context, in contract.CreateOrderInput) ([]string, error) {
	var drifted []string
	for _, it := range in.Items {
		inv, err := a.Orders.Inventory(ctx, it.SKU)
		if err != nil {
			return nil, fmt.Errorf("read inventory %s after refusal: %w", it.SKU, err)
		}
		if inv.Available >= it.Quantity {
			continue
		}
		drifted = append(drifted, it.SKU)
		a.logger(ctx).Error("stock drift: redis reserved units that mysql does not have",
			"order_id", in.OrderID, "sku_id", it.SKU, "quantity", it.Quantity, "db_available", inv.Available)
		if err := a.Stock.RecordDrift(ctx, it.SKU, in.OrderID, it.Quantity); err != nil {
			return nil, fmt.Errorf("record drift of %s: %w", it.SKU, err)
		}
	}
	return drifted, nil
}

// CloseOrder is the database half of compensation: a compare-and-set from
// PENDING_PAYMENT that moves the units frozen -> available, journaled. It is
// idempotent. Its business answers: OrderPaid if the order was paid
// meanwhile, OrderClosed if it closed otherwise, PaymentReceived if our door
// took money for it in time that the workflow has not applied.
func (a *Activities) CloseOrder(ctx context.Context, in contract.CloseOrderInput) (contract.CloseOrderResult, error) {
	var o orderdb.Order
	var err error
	switch {
	case in.Abandon:
		o, err = a.Orders.AbandonOrder(ctx, in.OrderID, string(in.Reason))
	case in.IgnoreReceipts:
		o, err = a.Orders.CloseOrderIgnoringReceipts(ctx, in.OrderID, in.Status, string(in.Reason))
	default:
		o, err = a.Orders.CloseOrder(ctx, in.OrderID, in.Status, string(in.Reason))
	}
	if err == nil {
		if o.Degraded {
			// The units came back to MySQL, not to Redis, which never had
			// them taken (CloseOrder flagged the SKUs in the same
			// transaction).
			if err := a.requestResync(ctx, orderSKUs(o)); err != nil {
				return contract.CloseOrderResult{}, err
			}
		}
		return contract.CloseOrderResult{}, nil
	}
	op := "close order " + in.OrderID
	switch flashsale.ErrorCode(err) {
	case flashsale.OrderNotFound:
		// Only after a failed CreateOrder of a workflow that predates
		// Abandon: the order never reached the database, so nothing is
		// frozen and nothing needs releasing.
		return contract.CloseOrderResult{}, nil
	case flashsale.AlreadyPaid, flashsale.OrderClosed:
		return contract.CloseOrderResult{}, refuse(op, err)
	case flashsale.PaymentReceived:
		// Only a receipt the workflow can apply is an answer; one the
		// store did not name is retried like any other failure.
		if received, ok := errors.AsType[*orderdb.PaymentReceivedError](err); ok {
			r := received.Receipt
			return contract.CloseOrderResult{}, refuse(op, err,
				contract.PaymentReceivedDetails{TransactionID: r.TransactionID, Amount: r.Amount, ReceivedAt: r.ReceivedAt})
		}
	case flashsale.Permanent:
		// Still retried: compensation must never give up, the units have
		// to come back once an operator repairs the data. The workflow
		// shows the order STALLED meanwhile.
		a.logger(ctx).Error("close order refused by the database; retrying until repaired",
			"order_id", in.OrderID, "error", err)
	}
	return contract.CloseOrderResult{}, fmt.Errorf("%s: %w", op, err)
}
