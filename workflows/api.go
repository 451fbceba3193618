// Package workflows holds the order workflow: one durable Temporal workflow
// per order that reserves stock in Redis, writes the order to MySQL, waits
// for payment until a deadline, and compensates when the money never comes.
//
// This file is the contract that the worker, the starter and the HTTP API
// share: names, inputs, results and statuses. Each type is a struct so a
// field can be added without breaking running histories.
package workflows

import (
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
)

// OrderWorkflowID is the workflow id of an order. Carrying the business id
// makes the id itself the idempotency key: a repeated start with the same
// order id reaches the same workflow instead of buying twice.
func OrderWorkflowID(orderID string) string { return "order-" + orderID }

// Names a person reading the Temporal Web UI sees on events.
const (
	// UpdateReserve returns the outcome of the reservation (reserved with a
	// pay-by time, or rejected). Sent together with the start
	// (Update-with-Start) so the buyer learns it in one round trip.
	UpdateReserve = "reserve"
	// UpdatePay hands a payment to the order and returns what became of it
	// (captured, duplicate, or recorded for refund).
	UpdatePay = "pay"
	// SignalPayment is the fire-and-forget form of UpdatePay, for payment
	// providers whose callbacks cannot wait for an answer.
	SignalPayment = "payment"
	// SignalCancel asks an unpaid order to cancel and release its stock.
	SignalCancel = "cancel"
	// QueryStatus returns the OrderView.
	QueryStatus = "status"
)

// Search attributes kept current by the workflow, so an operator can filter
// orders in the Web UI (e.g. `SkuIds = "1001" AND OrderStatus = "EXPIRED"`).
// They must be registered on the namespace (see .ci/run).
var (
	OrderStatusKey = temporal.NewSearchAttributeKeyKeyword("OrderStatus")
	UserIDKey      = temporal.NewSearchAttributeKeyKeyword("UserId")
	SKUIDsKey      = temporal.NewSearchAttributeKeyKeywordList("SkuIds")

	// SearchAttributes lists the keys above: the worker makes sure the
	// namespace has them before it takes an order (a missing one would
	// make every start with them fail).
	SearchAttributes = []temporal.SearchAttributeKey{OrderStatusKey, UserIDKey, SKUIDsKey}
)

// RunningOrdersQuery is the visibility query for the running order
// workflows holding sku.
func RunningOrdersQuery(sku string) string {
	quoted := strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(sku)
	return fmt.Sprintf("ExecutionStatus = 'Running' AND WorkflowType = 'OrderWorkflow' AND %s = '%s'",
		SKUIDsKey.GetName(), quoted)
}

// Status is an order's lifecycle state.
type Status string

const (
	// StatusReserving: the workflow is taking stock; the buyer is waiting.
	StatusReserving Status = "RESERVING"
	// StatusRejected: no stock was taken (sold out, unknown SKU, bad input).
	// A rejected order has no database row.
	StatusRejected       Status = "REJECTED"
	StatusPendingPayment Status = "PENDING_PAYMENT"
	StatusPaid           Status = "PAID"
	StatusExpired        Status = "EXPIRED"
	StatusCancelled      Status = "CANCELLED"
	// StatusStalled: the order is being closed (expired, cancelled) but its
	// compensation (CloseOrder in MySQL, the Redis release) has not finished
	// within a minute of pay_by (or of starting, if later), because a
	// dependency keeps failing. It keeps retrying, never gives up (the
	// units must come back), and the order moves to its final status once
	// it completes. An operator filters for it in the Web UI
	// (OrderStatus = "STALLED"); the worker logs it at ERROR. Not closed.
	StatusStalled Status = "STALLED"
)

// Closed reports whether the order can no longer change.
func (s Status) Closed() bool {
	switch s {
	case StatusRejected, StatusPaid, StatusExpired, StatusCancelled:
		return true
	}
	return false
}

// Reasons explain REJECTED, EXPIRED and CANCELLED orders. They are stable
// codes: the HTTP API maps them to error codes.
const (
	ReasonSoldOut        = "SOLD_OUT"
	ReasonUnknownSKU     = "UNKNOWN_SKU"
	ReasonInvalid        = "INVALID_REQUEST"
	ReasonStockDrift     = "STOCK_DRIFT" // Redis said yes, MySQL said no; see CreateOrder
	ReasonPaymentTimeout = "PAYMENT_TIMEOUT"
	ReasonBuyerCancelled = "CANCELLED_BY_BUYER"
	// ReasonUnavailable: Redis or MySQL failed for longer than a buyer
	// should wait; whatever the order had taken was given back.
	ReasonUnavailable = "UNAVAILABLE"
	// ReasonLimitExceeded: the buyer already holds (pending or paid) as many
	// units of a SKU as its per-user limit allows. MySQL decides; the Redis
	// units the order took were given back.
	ReasonLimitExceeded = "LIMIT_EXCEEDED"
)

// Input limits. Orders are checked before any stock moves, so a bad request
// leaves no state behind.
const (
	MaxIDLength     = 64
	MaxItems        = 20
	MaxItemQuantity = 1000
)

// Item is one line of an order.
type Item struct {
	SKU      string `json:"sku_id"`
	Quantity int64  `json:"quantity"`
}

// OrderInput starts an OrderWorkflow.
type OrderInput struct {
	OrderID string `json:"order_id"`
	UserID  string `json:"user_id"`
	Items   []Item `json:"items"`
	// PaymentTimeout is how long the buyer has to pay, counted from the
	// moment the order is written. Zero means the worker's PAYMENT_TIMEOUT
	// (default 15m).
	PaymentTimeout time.Duration `json:"payment_timeout,omitempty"`
	// FromOrder is set on a waitlist offer: the order id of the expired or
	// cancelled order whose Redis units this order takes over (moved, never
	// put back on open sale in between). Empty for every buyer's order.
	FromOrder string `json:"from_order,omitempty"`
}

// ReserveRequest is the UpdateReserve argument.
type ReserveRequest struct {
	// UserID, when set, must be the order's buyer: a repeated order id from
	// another user is refused instead of being told someone else's answer.
	UserID string `json:"user_id,omitempty"`
}

// Reservation is the answer to UpdateReserve.
type Reservation struct {
	OrderID string `json:"order_id"`
	// Status is PENDING_PAYMENT (reserved) or REJECTED.
	Status Status    `json:"status"`
	Amount int64     `json:"amount"`
	PayBy  time.Time `json:"pay_by,omitzero"`
	Reason string    `json:"reason,omitempty"`
}

// Payment is the UpdatePay argument and the SignalPayment payload.
type Payment struct {
	TransactionID string `json:"transaction_id"`
	Amount        int64  `json:"amount"`
	// ReceivedAt is when our door (the HTTP API, the CLI) took the
	// payment. The order judges it against pay_by by this time, not by
	// when the workflow got to it (see paymentArrivalChangeID). Set by our
	// processes only: a provider's callback cannot carry it.
	ReceivedAt time.Time `json:"received_at,omitzero"`
}

// RefundRequired marks a payment whose money must go back.
const RefundRequired = "REQUIRED"

// Why a payment needs a refund. Stable codes; the HTTP API maps them.
const (
	RefundReasonAmountMismatch = "AMOUNT_MISMATCH"
	RefundReasonOrderClosed    = "ORDER_CLOSED"
	RefundReasonAlreadyPaid    = "ALREADY_PAID"
	RefundReasonUnknownOrder   = "UNKNOWN_ORDER"
	// RefundReasonPaymentFailed: the database refused the payment for good
	// (a value it cannot store, a row that breaks its constraints). Nothing
	// was captured; the money goes back, and the worker logged the cause at
	// ERROR for an operator. The order is unchanged.
	RefundReasonPaymentFailed = "PAYMENT_FAILED"
)

// PaymentReasonTransactionConflict is the Reason of a PaymentOutcome with
// Conflict set: the transaction id is recorded for another order.
const PaymentReasonTransactionConflict = "TRANSACTION_CONFLICT"

// PaymentOutcome is the answer to UpdatePay.
type PaymentOutcome struct {
	OrderID       string `json:"order_id"`
	TransactionID string `json:"transaction_id"`
	// Status is the order's status after the payment was handled.
	Status Status `json:"status"`
	// Refund is RefundRequired when the money cannot be kept: the order had
	// closed, was paid by another transaction, or the amount was wrong.
	Refund string `json:"refund,omitempty"`
	// Reason says why a refund is required, or, with Conflict,
	// PaymentReasonTransactionConflict.
	Reason string `json:"reason,omitempty"`
	// Duplicate is true when this transaction had been handled before.
	Duplicate bool `json:"duplicate,omitempty"`
	// Queued is set by the client (orders.Service.Pay), never by the
	// workflow: the order did not answer in time, so the payment was
	// handed to it as a signal, durably, with its arrival time. The order
	// applies it, or records it for refund, on its own; its status query
	// shows the outcome among Payments. Status is then empty.
	Queued bool `json:"queued,omitempty"`
	// Conflict is true when the transaction id is already recorded for
	// another order: the money is that order's, so this order neither took
	// it nor owes it back (Refund is empty). The order is unchanged and
	// still payable with a transaction of its own.
	Conflict bool `json:"conflict,omitempty"`
}

// CancelRequest is the SignalCancel payload.
type CancelRequest struct {
	Reason string `json:"reason,omitempty"`
}

// OrderView is what QueryStatus returns and what the workflow returns when
// it ends.
type OrderView struct {
	OrderID  string           `json:"order_id"`
	UserID   string           `json:"user_id"`
	Items    []Item           `json:"items"`
	Status   Status           `json:"status"`
	Amount   int64            `json:"amount"`
	PayBy    time.Time        `json:"pay_by,omitzero"`
	Reason   string           `json:"reason,omitempty"`
	Payments []PaymentOutcome `json:"payments,omitempty"`
	// FromOrder: see OrderInput.FromOrder.
	FromOrder string `json:"from_order,omitempty"`
	// OfferedTo is set on an expired or cancelled order whose units were
	// offered to a waiting buyer instead of open sale: the new order's id.
	OfferedTo string `json:"offered_to,omitempty"`
	// Degraded: Redis could not be used, so the order was reserved in MySQL
	// alone (see activities/degraded.go).
	Degraded bool `json:"degraded,omitempty"`
}
