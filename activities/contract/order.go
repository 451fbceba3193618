package contract

import (
	"time"

	"github.com/flashsale/flashsale"
)

// The order workflows' activities, as the worker registers them (the
// methods of activities.Activities). ReserveStock and CreateOrder run as
// local activities.
const (
	ReserveStock    = "ReserveStock"
	CreateOrder     = "CreateOrder"
	ReleaseStock    = "ReleaseStock"
	CloseOrder      = "CloseOrder"
	ConfirmPayment  = "ConfirmPayment"
	RecordRefund    = "RecordRefund"
	OfferToWaitlist = "OfferToWaitlist"
	ExtendHold      = "ExtendHold"
)

// ReserveStockInput names the order and what it wants.
type ReserveStockInput struct {
	OrderID string           `json:"order_id"`
	Items   []flashsale.Item `json:"items"`
	// UserID is the buyer, whose units are counted against each SKU's
	// per-buyer limit before any is taken (inventory.Store.ReserveFor).
	// Empty in histories recorded before the limit moved into Redis:
	// those orders count nothing there.
	UserID string `json:"user_id,omitempty"`
	// FromOrder, when set, names a released order whose Redis units this
	// order takes over instead of taking from the buckets (a waitlist
	// offer; see inventory.Store.TransferTo). Only single-item orders carry it.
	FromOrder string `json:"from_order,omitempty"`
	// AtPayment: the order was placed on a SKU that deducts at payment
	// (ReserveStockResult.Deferred) and is being paid: its units are taken
	// now, from the buckets, as any order's are when placed.
	AtPayment bool `json:"at_payment,omitempty"`
	// Deduct is the order's workflows.OrderInput.Deduct: DeductHold skips
	// the booking call (book.lua) of a one-line order, whose SKU the door
	// read as taking no bookings; empty or DeductPayment asks it.
	Deduct flashsale.Deduct `json:"deduct,omitempty"`
}

// ReserveStockResult lists, per item, the buckets the units came from.
type ReserveStockResult struct {
	// Deferred: the SKU deducts at payment; the order took a booking
	// only, no unit (inventory.Store.Book).
	Deferred     bool                    `json:"deferred,omitempty"`
	Reservations []flashsale.Reservation `json:"reservations"`
	// Degraded: Redis could not be used (unreachable, or the SKU awaits a
	// resync), so nothing was taken from it; the order is reserved in
	// MySQL alone (CreateOrderInput.Degraded). See activities/degraded.go.
	Degraded bool `json:"degraded,omitempty"`
	// DegradedReason says why, for the order's history.
	DegradedReason string `json:"degraded_reason,omitempty"`
}

// ReleaseStockInput names the order whose Redis units go back on sale.
type ReleaseStockInput struct {
	OrderID string           `json:"order_id"`
	Items   []flashsale.Item `json:"items"`
	// FromOrder is the released order a waitlist offer took its units
	// from. Its units are released too: after a successful hand-over that
	// moves nothing (its markers say "given back"), and if the hand-over
	// never happened (Redis down past the reservation budget) it returns
	// the units nobody else would release.
	FromOrder string `json:"from_order,omitempty"`
	// Deferred: the order booked its SKU (ReserveStockResult.Deferred):
	// its booking goes back too.
	Deferred bool `json:"deferred,omitempty"`
}

// ReleaseStockResult reports how many units this call returned; a retry
// reports 0 because the first attempt already returned them.
type ReleaseStockResult struct {
	Released int64 `json:"released"`
}

// CreateOrderInput is the order as the database stores it: the buyer's
// order (its fields flat in the JSON, as before it was embedded) and what
// the database needs besides. FromOrder is left empty: the database keeps
// no origin (a waitlist offer's is in its id), and the input's JSON stays
// what it always was.
type CreateOrderInput struct {
	flashsale.Order
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
	// Deferred: the order booked its SKU and takes its units when paid
	// (orderdb.NewOrder.Deferred).
	Deferred bool `json:"deferred,omitempty"`
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

// CreateOrderResult carries what only the database knows: the price, the
// deadline, and the order's rules from its SKUs' terms (flashsale.Terms;
// absent in histories recorded before terms, which kept the defaults).
type CreateOrderResult struct {
	Amount int64     `json:"amount"`
	PayBy  time.Time `json:"pay_by"`
	// LateCapture: money after pay_by is captured while the order still
	// holds its units.
	LateCapture bool `json:"late_capture,omitempty"`
	// ReleaseOnFailed: a FAILED payment callback closes the order at once.
	ReleaseOnFailed bool `json:"release_on_failed,omitempty"`
}

// ExtendHoldInput moves an unpaid order's pay_by From -> To, once
// (orderdb.Store.ExtendHold).
type ExtendHoldInput struct {
	OrderID string    `json:"order_id"`
	From    time.Time `json:"from"`
	To      time.Time `json:"to"`
}

// ExtendHoldResult is the order's pay_by after the extension.
type ExtendHoldResult struct {
	PayBy time.Time `json:"pay_by"`
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

// ConfirmPaymentInput is a payment to apply to an order.
type ConfirmPaymentInput struct {
	OrderID       string `json:"order_id"`
	TransactionID string `json:"transaction_id"`
	Amount        int64  `json:"amount"`
}

// ConfirmPaymentResult says what the database made of the payment.
type ConfirmPaymentResult struct {
	OrderStatus   flashsale.Status        `json:"order_status"`
	PaymentStatus flashsale.PaymentStatus `json:"payment_status"`
	Reason        flashsale.Code          `json:"reason,omitempty"`
	Duplicate     bool                    `json:"duplicate,omitempty"`
}

// RefundRequired reports whether the database recorded the payment for
// refund instead of capturing it (the order had closed, or was paid by
// another transaction).
func (r ConfirmPaymentResult) RefundRequired() bool {
	return r.PaymentStatus == flashsale.PaymentRefundRequired
}

// RecordRefundInput is money that arrived for an order that cannot take it.
type RecordRefundInput struct {
	OrderID       string         `json:"order_id"`
	TransactionID string         `json:"transaction_id"`
	Amount        int64          `json:"amount"`
	Reason        flashsale.Code `json:"reason"`
}

// RecordRefundResult is the payment as stored for the order. Histories
// recorded before these fields existed decode it empty; the workflow reads
// an empty PaymentStatus as REFUND_REQUIRED, which is all it could be then.
type RecordRefundResult struct {
	// PaymentStatus is REFUND_REQUIRED, or CAPTURED when the transaction
	// had already paid this very order (a ConfirmPayment that committed
	// after the workflow stopped waiting for it): the money is kept.
	PaymentStatus flashsale.PaymentStatus `json:"payment_status,omitempty"`
	// OrderID is the order the stored payment belongs to: always the
	// input's, since another order's transaction is a TransactionConflict.
	OrderID string `json:"order_id,omitempty"`
}

// Captured reports whether the transaction turned out to have paid this
// very order: the money is kept, nothing is owed back.
func (r RecordRefundResult) Captured() bool {
	return r.PaymentStatus == flashsale.PaymentCaptured
}

// OfferToWaitlistInput names the released order and its SKU.
type OfferToWaitlistInput struct {
	ReleasedOrderID string `json:"released_order_id"`
	SKU             string `json:"sku_id"`
}

// OfferToWaitlistResult names the user the released units are offered to;
// empty when nobody waits.
type OfferToWaitlistResult struct {
	UserID string `json:"user_id,omitempty"`
	// UserDigest is UserID as Temporal's visibility keeps it
	// (flashsale.UserIDDigest), for the offer's search attributes.
	UserDigest string `json:"user_digest,omitempty"`
}
