// Package workflows holds the order workflow: one durable Temporal workflow
// per order that reserves stock in Redis, writes the order to MySQL, waits
// for payment until a deadline, and compensates when the money never comes.
//
// This file is the contract that the worker, the starter and the HTTP API
// share: names, inputs and results. The nouns inside them (an item, a
// status, a reason code) are the flashsale root's. Each type is a struct so
// a field can be added without breaking running histories.
//
// One file per job: order.go is the workflow's shape (setup, run, the
// reservation), handlers.go its query, updates and signals, deadline.go the
// wait for money, payment.go applying it, compensate.go the undo list,
// waitlist.go the offer to a waiting buyer, codes.go reading activities'
// answers, validate.go the input check, worker.go registration. A fair
// sale's workflow is sale.go, its contract saleapi.go.
package workflows

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/flashsale/flashsale"
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
	// UpdateExtendHold moves an unpaid order's pay_by once, by at most
	// flashsale.MaxHoldExtension, when its payment provider says the
	// buyer started paying; it answers the new pay_by (HoldExtended).
	UpdateExtendHold = "extend-hold"
	// SignalPaymentFailed tells the order its provider reported a failed
	// payment (PaymentFailure); a release_on_failed order closes at once.
	SignalPaymentFailed = "payment-failed"
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

// OrderSearchAttributes are the search attributes an order is started
// with: its buyer as userDigest (flashsale.UserIDDigest: the visibility
// store an operator browses holds no raw user id), its SKUs (sorted) and
// OrderStatus PENDING_PAYMENT, which a reserved order keeps without an
// upsert of its own (a rejected one upserts REJECTED). Set on the start,
// they cost the workflow no event.
func OrderSearchAttributes(in OrderInput, userDigest string) temporal.SearchAttributes {
	return temporal.NewSearchAttributes(
		OrderStatusKey.ValueSet(string(flashsale.StatusPendingPayment)),
		UserIDKey.ValueSet(userDigest),
		SKUIDsKey.ValueSet(sortedSKUs(in.Order())),
	)
}

// OrderWorkflowType is the order workflow's registered type: what the Web
// UI shows in its Type column, and what every query for orders names
// (RunningOrdersQuery).
const OrderWorkflowType = "OrderWorkflow"

// isOrder is the visibility filter that finds orders.
func isOrder() string { return "WorkflowType = '" + OrderWorkflowType + "'" }

// RunningOrdersQuery is the visibility query for the running order
// workflows holding sku.
func RunningOrdersQuery(sku string) string {
	quoted := strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(sku)
	return fmt.Sprintf("ExecutionStatus = 'Running' AND %s AND %s = '%s'",
		isOrder(), SKUIDsKey.GetName(), quoted)
}

// BuyerOrdersQuery is the visibility query for a buyer's orders, by the
// keyed hash of their id (flashsale.UserIDDigest): the UserId search
// attribute holds nothing else.
func BuyerOrdersQuery(userDigest string) string {
	return fmt.Sprintf("%s AND %s = '%s'", isOrder(), UserIDKey.GetName(), userDigest)
}

// StalledOrdersQuery is the visibility query for the running order
// workflows showing STALLED: compensation still retrying a minute past the
// deadline (the worker's flashsale_orders_stalled gauge counts them).
func StalledOrdersQuery() string {
	return fmt.Sprintf("ExecutionStatus = 'Running' AND %s AND %s = '%s'",
		isOrder(), OrderStatusKey.GetName(), flashsale.StatusStalled)
}

// OrderInput starts an order (OrderWorkflow): the buyer's order (the fields
// of flashsale.Order, flat, as every recorded history has them) and how
// long they have to pay.
//
// The order's fields are listed rather than flashsale.Order embedded
// because the Temporal client checks a workflow argument's Go type against
// OrderWorkflow's parameter, and callers build OrderInput with composite
// literals, which cannot name promoted fields. Order() is the domain order.
type OrderInput struct {
	OrderID string           `json:"order_id"`
	UserID  string           `json:"user_id"`
	Items   []flashsale.Item `json:"items"`
	// PaymentTimeout is how long the buyer has to pay, counted from the
	// moment the order is written. Zero means the worker's PAYMENT_TIMEOUT
	// (default 15m).
	PaymentTimeout time.Duration `json:"payment_timeout,omitempty"`
	// FromOrder: see flashsale.Order.FromOrder.
	FromOrder string `json:"from_order,omitempty"`
	// Deduct is when the SKU of a one-line order takes its unit, as the
	// door read it in Redis with the stock (edge.Ticket.Deduct): with
	// DeductHold, ReserveStock skips the booking call a SKU sold at
	// payment needs. Empty (an order started before the field, by the
	// CLI, or as a waitlist offer) books as before: ReserveStock asks.
	// The call is a local activity's, whose input no history records, so
	// the field changes no command (docs/versioning.md, rule 1).
	Deduct flashsale.Deduct `json:"deduct,omitempty"`
}

// Order is the buyer's order in the house vocabulary.
func (in OrderInput) Order() flashsale.Order {
	return flashsale.Order{OrderID: in.OrderID, UserID: in.UserID, Items: in.Items, FromOrder: in.FromOrder}
}

// Validate is flashsale.Order.Validate plus the workflow's own field.
func (in OrderInput) Validate() error {
	err := in.Order().Validate()
	if in.PaymentTimeout < 0 {
		err = errors.Join(err, flashsale.Errorf(flashsale.Invalid, "payment_timeout must not be negative"))
	}
	return err
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
	// Status is PENDING_PAYMENT (reserved) or REJECTED, with the
	// flashsale code of the refusal as Reason.
	Status flashsale.Status `json:"status"`
	Amount int64            `json:"amount"`
	PayBy  time.Time        `json:"pay_by,omitzero"`
	Reason flashsale.Code   `json:"reason,omitempty"`
}

// Payment is the UpdatePay argument and the SignalPayment payload.
type Payment struct {
	TransactionID string `json:"transaction_id"`
	Amount        int64  `json:"amount"`
	// ReceivedAt is when our door (the HTTP API, the CLI) took the
	// payment. The order judges it against pay_by by this time, not by
	// when the workflow got to it (see arrivalGrace). Set by our
	// processes only: a provider's callback cannot carry it.
	ReceivedAt time.Time `json:"received_at,omitzero"`
}

// RefundRequired marks a payment whose money must go back.
const RefundRequired = "REQUIRED"

// PaymentOutcome is the answer to UpdatePay.
type PaymentOutcome struct {
	OrderID       string `json:"order_id"`
	TransactionID string `json:"transaction_id"`
	// Status is the order's status after the payment was handled.
	Status flashsale.Status `json:"status"`
	// Refund is RefundRequired when the money cannot be kept: the order had
	// closed, was paid by another transaction, or the amount was wrong.
	Refund string `json:"refund,omitempty"`
	// Reason says why a refund is required (flashsale.AmountMismatch,
	// OrderClosed, AlreadyPaid, UnknownOrder, PaymentFailed), or, with
	// Conflict, flashsale.TransactionConflict.
	Reason flashsale.Code `json:"reason,omitempty"`
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

// HoldExtension is the UpdateExtendHold argument.
type HoldExtension struct {
	// ExtendBy is added to pay_by: 1s to flashsale.MaxHoldExtension.
	ExtendBy time.Duration `json:"extend_by"`
	// Reason is for the order's log (e.g. "3-D Secure started").
	Reason string `json:"reason,omitempty"`
}

// HoldExtended answers UpdateExtendHold.
type HoldExtended struct {
	OrderID string    `json:"order_id"`
	PayBy   time.Time `json:"pay_by"`
}

// PaymentFailure is the SignalPaymentFailed payload.
type PaymentFailure struct {
	TransactionID string `json:"transaction_id"`
}

// CancelRequest is the SignalCancel payload.
type CancelRequest struct {
	Reason string `json:"reason,omitempty"`
}

// OrderSummary is an order's lines and where it stands: the head of
// OrderView, and of the HTTP API's answer to GET /api/v1/orders/{id}, which
// shows it as it is.
type OrderSummary struct {
	OrderID string           `json:"order_id"`
	UserID  string           `json:"user_id"`
	Items   []flashsale.Item `json:"items"`
	Status  flashsale.Status `json:"status"`
	Amount  int64            `json:"amount"`
	PayBy   time.Time        `json:"pay_by,omitzero"`
	Reason  flashsale.Code   `json:"reason,omitempty"`
}

// OrderView is what QueryStatus returns and what the workflow returns when
// it ends.
type OrderView struct {
	OrderSummary
	Payments []PaymentOutcome `json:"payments,omitempty"`
	// FromOrder: see flashsale.Order.FromOrder.
	FromOrder string `json:"from_order,omitempty"`
	// OfferedTo is set on an expired or cancelled order whose units were
	// offered to a waiting buyer instead of open sale: the new order's id.
	OfferedTo string `json:"offered_to,omitempty"`
	// Degraded: Redis could not be used, so the order was reserved in MySQL
	// alone (see activities/degraded.go).
	Degraded bool `json:"degraded,omitempty"`
	// HoldExtended: the payment provider extended pay_by once.
	HoldExtended bool `json:"hold_extended,omitempty"`
}
