// Package activities holds the side effects of the order workflow: Redis
// stock reservations and MySQL order writes. Every activity is idempotent,
// because Temporal retries them after timeouts and crashes, and every
// business rejection is a non-retryable application error with a stable
// type, because retrying "sold out" only burns time.
package activities

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/flashsale/flashsale/internal/inventory"
	"github.com/flashsale/flashsale/internal/orderdb"
	"github.com/flashsale/flashsale/internal/redisguard"
	"github.com/flashsale/flashsale/internal/requestid"
)

// Application error types. The workflow branches on them; they are never
// retried.
const (
	ErrTypeSoldOut        = "SoldOut"
	ErrTypeUnknownSKU     = "UnknownSKU"
	ErrTypeStockDrift     = "StockDrift"
	ErrTypeAmountMismatch = "AmountMismatch"
	ErrTypeOrderPaid      = "OrderPaid"
	ErrTypeOrderClosed    = "OrderClosed"
	// ErrTypeInvalid: input that can never succeed, or a database answer
	// no retry can change (orderdb.ErrPermanent): the same statement would
	// fail the same way forever, and retrying it only holds the order.
	ErrTypeInvalid = "InvalidRequest"
	// ErrTypeLimitExceeded: MySQL refused the order because the user would
	// hold more units of a SKU than its per-user limit. The Redis units the
	// order took are real (unlike StockDrift) and must be given back.
	ErrTypeLimitExceeded = "LimitExceeded"
	// ErrTypeTransactionConflict: the payment's transaction id is recorded
	// for another order (TransactionConflictDetails names it). Nothing was
	// written for this order; the money is the other order's, so it is
	// neither captured nor refunded here.
	ErrTypeTransactionConflict = "TransactionConflict"
	// ErrTypePaymentReceived: CloseOrder found a payment our door received
	// by the order's deadline that the order has not handled
	// (PaymentReceivedDetails names it). Nothing was closed; the workflow
	// applies the payment instead.
	ErrTypePaymentReceived = "PaymentReceived"
)

// NonRetryableErrorTypes lists the types above, for retry policies.
var NonRetryableErrorTypes = []string{
	ErrTypeSoldOut, ErrTypeUnknownSKU, ErrTypeStockDrift, ErrTypeAmountMismatch,
	ErrTypeOrderPaid, ErrTypeOrderClosed, ErrTypeInvalid, ErrTypeLimitExceeded,
	ErrTypeTransactionConflict, ErrTypePaymentReceived,
}

// PaymentReceivedDetails is attached to a PaymentReceived error: the
// payment as our door received it.
type PaymentReceivedDetails struct {
	TransactionID string    `json:"transaction_id"`
	Amount        int64     `json:"amount"`
	ReceivedAt    time.Time `json:"received_at"`
}

// TransactionConflictDetails is attached to a TransactionConflict error.
type TransactionConflictDetails struct {
	TransactionID string `json:"transaction_id"`
	// RecordedFor is the order the transaction id belongs to.
	RecordedFor string `json:"recorded_for"`
}

// paymentError turns the store's refusals of a payment into the workflow's
// non-retryable types; anything else stays retryable, wrapped with op.
func paymentError(op string, err error) error {
	var conflict *orderdb.TransactionConflictError
	switch {
	case errors.As(err, &conflict):
		return temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeTransactionConflict, nil,
			TransactionConflictDetails{TransactionID: conflict.TransactionID, RecordedFor: conflict.RecordedFor})
	case errors.Is(err, orderdb.ErrAmountMismatch):
		return temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeAmountMismatch, nil)
	case errors.Is(err, orderdb.ErrInvalidArgument), errors.Is(err, orderdb.ErrPermanent):
		return temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeInvalid, nil)
	default:
		return fmt.Errorf("%s: %w", op, err)
	}
}

// Activities holds the dependencies of the order activities. The workflow
// refers to the methods through a nil *Activities; the worker registers a
// real one.
type Activities struct {
	Stock  *inventory.Store
	Orders *orderdb.Store
	Logger *slog.Logger
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

// Item is one order line as the activities see it.
type Item struct {
	SKU      string `json:"sku_id"`
	Quantity int64  `json:"quantity"`
}

// ReserveStockInput names the order and what it wants.
type ReserveStockInput struct {
	OrderID string `json:"order_id"`
	Items   []Item `json:"items"`
	// FromOrder, when set, names a released order whose Redis units this
	// order takes over instead of taking from the buckets (a waitlist
	// offer; see Store.Transfer). Only single-item orders carry it.
	FromOrder string `json:"from_order,omitempty"`
}

// ReserveStockResult lists, per item, the buckets the units came from.
type ReserveStockResult struct {
	Reservations []inventory.Reservation `json:"reservations"`
	// Degraded: Redis could not be used (unreachable, or the SKU awaits a
	// resync), so nothing was taken from it; the order is reserved in
	// MySQL alone (CreateOrderInput.Degraded). See degraded.go.
	Degraded bool `json:"degraded,omitempty"`
	// DegradedReason says why, for the order's history.
	DegradedReason string `json:"degraded_reason,omitempty"`
}

// SoldOutDetails is attached to a SoldOut or UnknownSKU error.
type SoldOutDetails struct {
	SKU string `json:"sku_id"`
}

// ReserveStock pre-deducts every item in Redis, all or nothing: when an item
// is short, the items already taken are given back before the order is
// rejected, so a rejected order holds nothing. Retries are safe because
// every Redis step is idempotent per order id.
//
// When Redis cannot be used, it answers Degraded instead and takes nothing
// (degraded.go): Redis is known down, a SKU awaits a resync, or the first
// item's call met an outage. An outage after the first item fails the
// attempt as before; the retry then finds the guard open and degrades, and
// the units the first attempt took stay under their markers, which the
// order's release gives back like any other. Waitlist offers never
// degrade: they hand over units Redis holds.
func (a *Activities) ReserveStock(ctx context.Context, in ReserveStockInput) (ReserveStockResult, error) {
	if in.FromOrder == "" {
		degrade, why, err := a.mustDegrade(ctx, in.Items)
		if err != nil {
			return ReserveStockResult{}, fmt.Errorf("reserve order %s: %w", in.OrderID, err)
		}
		if degrade {
			return a.degrade(ctx, in, why), nil
		}
	}
	var res ReserveStockResult
	for i, it := range in.Items {
		r, err := a.guardedReserve(ctx, in, it)
		if in.FromOrder == "" && i == 0 && (errors.Is(err, errRedisDown) || redisguard.IsOutage(err)) {
			return a.degrade(ctx, in, err.Error()), nil
		}
		if err == nil {
			res.Reservations = append(res.Reservations, r)
			continue
		}
		errType := ""
		switch {
		case errors.Is(err, inventory.ErrSoldOut), errors.Is(err, inventory.ErrReleased):
			errType = ErrTypeSoldOut
		case errors.Is(err, inventory.ErrUnknownSKU):
			errType = ErrTypeUnknownSKU
		case errors.Is(err, inventory.ErrInvalidArgument):
			// Input the order was validated against cannot become valid
			// by retrying (e.g. a retry asking for a different quantity).
			return ReserveStockResult{}, temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeInvalid, nil)
		default:
			return ReserveStockResult{}, fmt.Errorf("reserve %s for order %s: %w", it.SKU, in.OrderID, err)
		}
		if err := a.release(ctx, in.OrderID, in.Items[:i]); err != nil {
			// Retrying the whole activity is safe: items already taken are
			// replayed, not taken twice, and the release runs again.
			return ReserveStockResult{}, fmt.Errorf("undo partial reservation of order %s: %w", in.OrderID, err)
		}
		return ReserveStockResult{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("%s: %v", it.SKU, err), errType, nil, SoldOutDetails{SKU: it.SKU})
	}
	return res, nil
}

func (a *Activities) degrade(ctx context.Context, in ReserveStockInput, why string) ReserveStockResult {
	a.logger(ctx).Warn("reserving in mysql alone", "order_id", in.OrderID, "why", why)
	return ReserveStockResult{Degraded: true, DegradedReason: why}
}

// ReleaseStockInput names the order whose Redis units go back on sale.
type ReleaseStockInput struct {
	OrderID string `json:"order_id"`
	Items   []Item `json:"items"`
	// FromOrder is the released order a waitlist offer took its units
	// from. Its units are released too: after a successful hand-over that
	// moves nothing (its markers say "given back"), and if the hand-over
	// never happened (Redis down past the reservation budget) it returns
	// the units nobody else would release.
	FromOrder string `json:"from_order,omitempty"`
}

// ReleaseStockResult reports how many units this call returned; a retry
// reports 0 because the first attempt already returned them.
type ReleaseStockResult struct {
	Released int64 `json:"released"`
}

// ReleaseStock puts an order's Redis units back into the buckets they came
// from and clears the SKU's sold-out flag. It runs after the database has
// released the same units, so Redis never offers a unit MySQL still holds.
func (a *Activities) ReleaseStock(ctx context.Context, in ReleaseStockInput) (ReleaseStockResult, error) {
	var total int64
	for _, it := range in.Items {
		if in.FromOrder != "" {
			n, err := a.Stock.Release(ctx, in.FromOrder, it.SKU)
			if err != nil {
				return ReleaseStockResult{}, fmt.Errorf("release %s of order %s: %w", it.SKU, in.FromOrder, err)
			}
			total += n
		}
		n, err := a.Stock.Release(ctx, in.OrderID, it.SKU)
		if err != nil {
			return ReleaseStockResult{}, fmt.Errorf("release %s of order %s: %w", it.SKU, in.OrderID, err)
		}
		total += n
	}
	return ReleaseStockResult{Released: total}, nil
}

func (a *Activities) release(ctx context.Context, orderID string, items []Item) error {
	_, err := a.ReleaseStock(ctx, ReleaseStockInput{OrderID: orderID, Items: items})
	return err
}

// CreateOrderInput is the order as the database stores it.
type CreateOrderInput struct {
	OrderID string `json:"order_id"`
	UserID  string `json:"user_id"`
	Items   []Item `json:"items"`
	// PaymentTimeout overrides the worker's default when positive.
	PaymentTimeout time.Duration `json:"payment_timeout,omitempty"`
	// Degraded: ReserveStock took nothing from Redis. MySQL alone decides,
	// under the worker's degraded concurrency cap, and a refusal means
	// sold out rather than drift.
	Degraded bool `json:"degraded,omitempty"`
}

// CreateOrderResult carries what only the database knows: the price.
type CreateOrderResult struct {
	Amount int64     `json:"amount"`
	PayBy  time.Time `json:"pay_by"`
}

// StockDriftDetails is attached to a StockDrift error: the SKUs whose MySQL
// stock was short although Redis had reserved the units. The other items'
// Redis units are real and must be given back.
type StockDriftDetails struct {
	DriftedSKUs []string `json:"drifted_skus"`
}

// CreateOrder writes the order and freezes its units in one MySQL
// transaction; the database is the final guard against overselling. It is
// idempotent by order id.
//
// When the user would exceed the SKU's per-user limit, the order is rejected
// with LimitExceeded and nothing is written; the Redis units are real and
// the workflow gives them back.
//
// When MySQL refuses (available < qty although Redis said yes), Redis holds
// units that do not exist: the order is rejected with StockDrift, the drift
// is logged and counted in Redis for reconciliation, and the workflow must
// NOT put those units back into Redis.
func (a *Activities) CreateOrder(ctx context.Context, in CreateOrderInput) (CreateOrderResult, error) {
	items := make([]orderdb.Item, len(in.Items))
	for i, it := range in.Items {
		items[i] = orderdb.Item{SKU: it.SKU, Quantity: it.Quantity}
	}
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
		OrderID: in.OrderID, UserID: in.UserID, Items: items, PayBy: payBy, Degraded: in.Degraded,
	})
	switch {
	case err == nil:
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
	case in.Degraded && errors.Is(err, orderdb.ErrInsufficientStock):
		// Nothing was taken from Redis, so nothing drifted: MySQL simply
		// has no units left.
		return CreateOrderResult{}, temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeSoldOut, nil)
	case errors.Is(err, orderdb.ErrUnknownSKU):
		return CreateOrderResult{}, temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeUnknownSKU, nil)
	case errors.Is(err, orderdb.ErrInvalidArgument), errors.Is(err, orderdb.ErrPermanent):
		return CreateOrderResult{}, temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeInvalid, nil)
	case errors.Is(err, orderdb.ErrLimitExceeded):
		return CreateOrderResult{}, temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeLimitExceeded, nil)
	case errors.Is(err, orderdb.ErrInsufficientStock):
		drifted, derr := a.findDrift(ctx, in)
		if derr != nil {
			return CreateOrderResult{}, derr
		}
		return CreateOrderResult{}, temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeStockDrift, nil,
			StockDriftDetails{DriftedSKUs: drifted})
	default:
		return CreateOrderResult{}, fmt.Errorf("create order %s: %w", in.OrderID, err)
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

// ConfirmPaymentInput is a payment to apply to an order.
type ConfirmPaymentInput struct {
	OrderID       string `json:"order_id"`
	TransactionID string `json:"transaction_id"`
	Amount        int64  `json:"amount"`
}

// ConfirmPaymentResult says what the database made of the payment.
type ConfirmPaymentResult struct {
	OrderStatus   orderdb.Status        `json:"order_status"`
	PaymentStatus orderdb.PaymentStatus `json:"payment_status"`
	Reason        string                `json:"reason,omitempty"`
	Duplicate     bool                  `json:"duplicate,omitempty"`
}

// ConfirmPayment moves the order's units frozen -> sold and records the
// payment, once per transaction id. A payment the order cannot take (closed,
// or already paid by another transaction) is recorded for refund rather than
// lost.
//
// Non-retryable answers: TransactionConflict (the transaction id is another
// order's; nothing written), AmountMismatch, and InvalidRequest for input or
// a database answer that no retry can change. Every other error is retried.
func (a *Activities) ConfirmPayment(ctx context.Context, in ConfirmPaymentInput) (ConfirmPaymentResult, error) {
	r, err := a.Orders.ConfirmPayment(ctx, in.OrderID, in.TransactionID, in.Amount)
	if err != nil {
		if errors.Is(err, orderdb.ErrPermanent) {
			a.logger(ctx).Error("payment refused by the database for good", "order_id", in.OrderID,
				"transaction_id", in.TransactionID, "error", err)
		}
		return ConfirmPaymentResult{}, paymentError(fmt.Sprintf("confirm payment %s of order %s", in.TransactionID, in.OrderID), err)
	}
	return ConfirmPaymentResult{
		OrderStatus: r.Order.Status, PaymentStatus: r.Payment.Status,
		Reason: r.Payment.Reason, Duplicate: r.Duplicate,
	}, nil
}

// CloseOrderInput closes an unpaid order.
type CloseOrderInput struct {
	OrderID string         `json:"order_id"`
	Status  orderdb.Status `json:"status"` // EXPIRED or CANCELLED
	Reason  string         `json:"reason"`
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
// idempotent; it fails non-retryably if the order was paid meanwhile, which
// the workflow's single-threaded handling should make impossible.
func (a *Activities) CloseOrder(ctx context.Context, in CloseOrderInput) (CloseOrderResult, error) {
	var o orderdb.Order
	var err error
	switch {
	case in.Abandon:
		o, err = a.Orders.AbandonOrder(ctx, in.OrderID, in.Reason)
	case in.IgnoreReceipts:
		o, err = a.Orders.CloseOrderIgnoringReceipts(ctx, in.OrderID, in.Status, in.Reason)
	default:
		o, err = a.Orders.CloseOrder(ctx, in.OrderID, in.Status, in.Reason)
	}
	var received *orderdb.PaymentReceivedError
	switch {
	case err == nil:
		if o.Degraded {
			// The units came back to MySQL, not to Redis, which never had
			// them taken (CloseOrder flagged the SKUs in the same
			// transaction).
			if err := a.requestResync(ctx, orderSKUs(o)); err != nil {
				return CloseOrderResult{}, err
			}
		}
		return CloseOrderResult{}, nil
	case errors.Is(err, orderdb.ErrNotFound):
		// Only after a failed CreateOrder of a workflow that predates
		// Abandon: the order never reached the database, so nothing is
		// frozen and nothing needs releasing.
		return CloseOrderResult{}, nil
	case errors.Is(err, orderdb.ErrOrderPaid):
		return CloseOrderResult{}, temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeOrderPaid, nil)
	case errors.Is(err, orderdb.ErrOrderClosed):
		return CloseOrderResult{}, temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeOrderClosed, nil)
	case errors.As(err, &received):
		r := received.Receipt
		return CloseOrderResult{}, temporal.NewNonRetryableApplicationError(err.Error(), ErrTypePaymentReceived, nil,
			PaymentReceivedDetails{TransactionID: r.TransactionID, Amount: r.Amount, ReceivedAt: r.ReceivedAt})
	default:
		if errors.Is(err, orderdb.ErrPermanent) {
			// Still retried: compensation must never give up, the units
			// have to come back once an operator repairs the data. The
			// workflow shows the order STALLED meanwhile.
			a.logger(ctx).Error("close order refused by the database; retrying until repaired",
				"order_id", in.OrderID, "error", err)
		}
		return CloseOrderResult{}, fmt.Errorf("close order %s: %w", in.OrderID, err)
	}
}

// RecordRefundInput is money that arrived for an order that cannot take it.
type RecordRefundInput struct {
	OrderID       string `json:"order_id"`
	TransactionID string `json:"transaction_id"`
	Amount        int64  `json:"amount"`
	Reason        string `json:"reason"`
}

// RecordRefundResult is the payment as stored for the order. Histories
// recorded before these fields existed decode it empty; the workflow reads
// an empty PaymentStatus as REFUND_REQUIRED, which is all it could be then.
type RecordRefundResult struct {
	// PaymentStatus is REFUND_REQUIRED, or CAPTURED when the transaction
	// had already paid this very order (a ConfirmPayment that committed
	// after the workflow stopped waiting for it): the money is kept.
	PaymentStatus orderdb.PaymentStatus `json:"payment_status,omitempty"`
	// OrderID is the order the stored payment belongs to: always the
	// input's, since another order's transaction is a TransactionConflict.
	OrderID string `json:"order_id,omitempty"`
}

// RecordRefund records a payment as REFUND_REQUIRED, once per transaction
// id. It never touches inventory: the money is owed back, no unit is sold.
// A transaction id recorded for another order is a TransactionConflict and
// records nothing: refunding it would refund the other order's sale.
func (a *Activities) RecordRefund(ctx context.Context, in RecordRefundInput) (RecordRefundResult, error) {
	p, err := a.Orders.RecordRefund(ctx, orderdb.Payment{
		TransactionID: in.TransactionID, OrderID: in.OrderID, Amount: in.Amount,
		Status: orderdb.PaymentRefundRequired, Reason: in.Reason,
	})
	if err != nil {
		if errors.Is(err, orderdb.ErrPermanent) {
			a.logger(ctx).Error("refund refused by the database for good", "order_id", in.OrderID,
				"transaction_id", in.TransactionID, "error", err)
		}
		return RecordRefundResult{}, paymentError(fmt.Sprintf("record refund %s of order %s", in.TransactionID, in.OrderID), err)
	}
	return RecordRefundResult{PaymentStatus: p.Status, OrderID: p.OrderID}, nil
}

func orderSKUs(o orderdb.Order) []string {
	skus := make([]string, len(o.Items))
	for i, it := range o.Items {
		skus[i] = it.SKU
	}
	return skus
}
