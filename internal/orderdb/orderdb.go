// Package orderdb is the MySQL/MariaDB store of the flash sale: inventory,
// orders, payments and the inventory journal.
//
// Redis pre-deducts stock so that almost every request is settled there, but
// Redis can drift (failover, a lost script, a bug). This package is the final
// guard: every stock move is a conditional UPDATE inside a local transaction,
// the schema's CHECK constraints forbid negative or unbalanced stock, and
// every operation is idempotent so Temporal can retry activities freely.
//
// Lock order is always: the orders row, then inventory rows in ascending
// sku_id, then inserts. Keeping one global order is what keeps concurrent
// create/pay/close calls free of deadlocks (a rare one is still retried).
package orderdb

import (
	"time"

	"github.com/flashsale/flashsale"
)

// Inventory is the current stock of a SKU. Available+Frozen+Sold == Total.
type Inventory struct {
	SKU          string `json:"sku_id"`
	Total        int64  `json:"total"`
	Available    int64  `json:"available"`
	Frozen       int64  `json:"frozen"`
	Sold         int64  `json:"sold"`
	Price        int64  `json:"price"`
	Buckets      int    `json:"buckets"`
	PerUserLimit int    `json:"per_user_limit"`
	// RedisResync is non-zero while Redis's buckets must be re-synced from
	// MySQL: orders were reserved or closed in MySQL alone (Redis was
	// down). It counts those moves; FinishResync clears it.
	RedisResync int64 `json:"redis_resync,omitempty"`
	// SaleEndedAt is when the SKU's fair sale ended (SaleWorkflow's close,
	// EndSale): its Redis keys are removed from then on, and nothing is
	// on sale until a PUT or a preheat starts another sale.
	SaleEndedAt *time.Time `json:"sale_ended_at,omitempty"`
	// Queued: the SKU is sold through a fair sale only (its PUT said so,
	// or a sale of it was started); Redis carries a copy (the preheat).
	Queued bool `json:"queued,omitempty"`
	// Terms: how the SKU is sold (flashsale.Terms).
	flashsale.Terms
}

// Payment is money received for an order.
type Payment struct {
	TransactionID string                  `json:"transaction_id"`
	OrderID       string                  `json:"order_id"`
	Amount        int64                   `json:"amount"`
	Status        flashsale.PaymentStatus `json:"status"`
	Reason        string                  `json:"reason,omitempty"`
	CreatedAt     time.Time               `json:"created_at"`
}

// Order is an order with its items (by sku) and payments (in arrival order).
type Order struct {
	OrderID string           `json:"order_id"`
	UserID  string           `json:"user_id"`
	Status  flashsale.Status `json:"status"`
	Amount  int64            `json:"amount"`
	PayBy   time.Time        `json:"pay_by"`
	Reason  string           `json:"reason,omitempty"`
	// Degraded: reserved in MySQL alone while Redis was unreachable.
	Degraded bool `json:"degraded,omitempty"`
	// LateCapture, ReleaseOnFailed: the order's rules for money at the
	// deadline's edge, from its SKUs' terms when it was written
	// (flashsale.Terms). HoldExtended: its pay_by was extended once.
	LateCapture     bool `json:"late_capture,omitempty"`
	ReleaseOnFailed bool `json:"release_on_failed,omitempty"`
	HoldExtended    bool `json:"hold_extended,omitempty"`
	// Deferred: placed on a SKU that deducts at payment; it holds no
	// units until paid.
	Deferred bool `json:"deferred,omitempty"`
	// Items are by SKU; UnitPrice is the inventory price when the order
	// was created.
	Items     []flashsale.Item `json:"items"`
	Payments  []Payment        `json:"payments"`
	CreatedAt time.Time        `json:"created_at"`
	ClosedAt  *time.Time       `json:"closed_at,omitempty"`
}

// NewOrder is the input of CreateOrder: the buyer's order and its
// deadline. Items need SKU and Quantity; their UnitPrice is ignored (the
// store charges the inventory price). FromOrder is not stored: a waitlist
// offer's origin is in its id (flashsale.WaitlistOrderID).
type NewOrder struct {
	flashsale.Order
	PayBy time.Time `json:"pay_by"`
	// Degraded marks an order reserved without Redis (it took nothing from
	// the buckets). Creating or closing it flags its SKUs for a Redis
	// resync (Inventory.RedisResync).
	Degraded bool `json:"degraded,omitempty"`
	// Buckets names, per SKU, the Redis bucket the order's units came from
	// (the one that gave the most): a line of a SKU split into bucket rows
	// takes from that bucket's row first, so MySQL's rows mirror Redis's
	// buckets and two orders Redis served from two buckets meet on two
	// row locks. A SKU it does not name (a degraded order, an older
	// caller) starts at crc32(order id) % rows, where Redis starts its walk.
	Buckets map[string]int `json:"buckets,omitempty"`
	// WindowFrom, when set, is when the buyer's payment window starts: a
	// SKU of the order with a payment window of its own (the shortest, if
	// several have one) fixes pay_by at WindowFrom plus that window, read
	// in the transaction that prices the lines. PayBy stands otherwise.
	WindowFrom time.Time `json:"window_from,omitzero"`
	// Deferred: the order takes its units when paid (its SKUs deduct at
	// payment, flashsale.DeductPayment): it is written and counted against
	// the per-user limit, and freezes nothing.
	Deferred bool `json:"deferred,omitempty"`
}

// RestockResult is the outcome of Restock.
type RestockResult struct {
	Inventory Inventory `json:"inventory"`
	// Added is false when the request id had been applied before; nothing
	// changed then.
	Added bool `json:"added"`
}

// PaymentResult is the outcome of ConfirmPayment.
type PaymentResult struct {
	Order   Order   `json:"order"`
	Payment Payment `json:"payment"`
	// Duplicate is true when this transaction id had already been recorded;
	// Payment is then the recorded outcome and nothing was changed.
	Duplicate bool `json:"duplicate"`
}
