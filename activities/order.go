package activities

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/internal/orderdb"
)

// CreateOrderInput is the order as the database stores it.
type CreateOrderInput struct {
	OrderID string           `json:"order_id"`
	UserID  string           `json:"user_id"`
	Items   []flashsale.Item `json:"items"`
	// PaymentTimeout overrides the worker's default when positive.
	PaymentTimeout time.Duration `json:"payment_timeout,omitempty"`
	// Degraded: ReserveStock took nothing from Redis. MySQL alone decides,
	// under the worker's degraded concurrency cap, and a refusal means
	// sold out rather than drift.
	Degraded bool `json:"degraded,omitempty"`
	// Buckets names, per SKU, the Redis bucket ReserveStock took the units
	// from (BucketsOf), so MySQL takes them from that bucket's row
	// (orderdb.NewOrder.Buckets). Empty (degraded, or a worker from before
	// it) means MySQL starts where Redis starts its walk.
	Buckets map[string]int `json:"buckets,omitempty"`
}

// BucketsOf is CreateOrderInput.Buckets for what ReserveStock took: per SKU,
// the bucket that gave the most units (the first of equals; a waitlist
// offer's are the buckets it took over), nil for a degraded order, which
// took nothing from Redis.
func BucketsOf(r ReserveStockResult) map[string]int {
	var out map[string]int
	for _, res := range r.Reservations {
		most := int64(0)
		for _, p := range res.Parts {
			if p.Quantity > most {
				if out == nil {
					out = make(map[string]int, len(r.Reservations))
				}
				out[res.SKU], most = p.Bucket, p.Quantity
			}
		}
	}
	return out
}

// CreateOrderResult carries what only the database knows: the price.
type CreateOrderResult struct {
	Amount int64     `json:"amount"`
	PayBy  time.Time `json:"pay_by"`
}

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
func (a *Activities) CreateOrder(ctx context.Context, in CreateOrderInput) (CreateOrderResult, error) {
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
			return CreateOrderResult{}, fmt.Errorf("create order %s: wait for a degraded slot: %w", in.OrderID, err)
		}
		defer a.slots().Release(1)
	}
	o, err := a.Orders.CreateOrder(ctx, orderdb.NewOrder{
		OrderID: in.OrderID, UserID: in.UserID, Items: in.Items, PayBy: payBy, Degraded: in.Degraded, Buckets: in.Buckets,
	})
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
				return CreateOrderResult{}, err
			}
		}
		return CreateOrderResult{Amount: o.Amount, PayBy: o.PayBy}, nil
	}
	op := "create order " + in.OrderID
	switch code := flashsale.ErrorCode(err); {
	case code == flashsale.StockDrift && in.Degraded:
		// Nothing was taken from Redis, so nothing drifted: MySQL simply
		// has no units left.
		return CreateOrderResult{}, refuseAs(flashsale.SoldOut, op, err)
	case code == flashsale.StockDrift:
		drifted, derr := a.findDrift(ctx, in)
		if derr != nil {
			return CreateOrderResult{}, derr
		}
		return CreateOrderResult{}, refuse(op, err, StockDriftDetails{DriftedSKUs: drifted})
	case code == flashsale.UnknownSKU, code == flashsale.LimitExceeded, code == flashsale.OrderIDConflict,
		code == flashsale.Invalid, code == flashsale.Permanent:
		return CreateOrderResult{}, refuse(op, err)
	default:
		return CreateOrderResult{}, fmt.Errorf("%s: %w", op, err)
	}
}

// findDrift names the items MySQL cannot cover and records the drift. The
// transaction rolled back, so re-reading the rows tells which item was short.
func (a *Activities) findDrift(ctx context.Context, in CreateOrderInput) ([]string, error) {
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

// CloseOrderInput closes an unpaid order.
type CloseOrderInput struct {
	OrderID string           `json:"order_id"`
	Status  flashsale.Status `json:"status"` // EXPIRED or CANCELLED
	Reason  flashsale.Code   `json:"reason"`
	// Abandon: CreateOrder failed past its budget, so the order may or may
	// not exist; if it does not, a tombstone keeps a late attempt from
	// creating it (orderdb.Store.AbandonOrder). Status must be CANCELLED.
	Abandon bool `json:"abandon,omitempty"`
	// IgnoreReceipts closes even with a payment received in time on record:
	// the workflow tried to apply it and the database gave no answer by its
	// bound (orderdb.Store.CloseOrderIgnoringReceipts).
	IgnoreReceipts bool `json:"ignore_receipts,omitempty"`
}

// CloseOrderResult is empty; it exists so fields can be added.
type CloseOrderResult struct{}

// CloseOrder is the database half of compensation: a compare-and-set from
// PENDING_PAYMENT that moves the units frozen -> available, journaled. It is
// idempotent. Its business answers: OrderPaid if the order was paid
// meanwhile, OrderClosed if it closed otherwise, PaymentReceived if our door
// took money for it in time that the workflow has not applied.
func (a *Activities) CloseOrder(ctx context.Context, in CloseOrderInput) (CloseOrderResult, error) {
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
				return CloseOrderResult{}, err
			}
		}
		return CloseOrderResult{}, nil
	}
	op := "close order " + in.OrderID
	switch flashsale.ErrorCode(err) {
	case flashsale.OrderNotFound:
		// Only after a failed CreateOrder of a workflow that predates
		// Abandon: the order never reached the database, so nothing is
		// frozen and nothing needs releasing.
		return CloseOrderResult{}, nil
	case flashsale.AlreadyPaid, flashsale.OrderClosed:
		return CloseOrderResult{}, refuse(op, err)
	case flashsale.PaymentReceived:
		// Only a receipt the workflow can apply is an answer; one the
		// store did not name is retried like any other failure.
		if received, ok := errors.AsType[*orderdb.PaymentReceivedError](err); ok {
			r := received.Receipt
			return CloseOrderResult{}, refuse(op, err,
				PaymentReceivedDetails{TransactionID: r.TransactionID, Amount: r.Amount, ReceivedAt: r.ReceivedAt})
		}
	case flashsale.Permanent:
		// Still retried: compensation must never give up, the units have
		// to come back once an operator repairs the data. The workflow
		// shows the order STALLED meanwhile.
		a.logger(ctx).Error("close order refused by the database; retrying until repaired",
			"order_id", in.OrderID, "error", err)
	}
	return CloseOrderResult{}, fmt.Errorf("%s: %w", op, err)
}
