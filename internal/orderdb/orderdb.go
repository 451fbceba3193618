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
	"fmt"
	"time"

	"github.com/flashsale/flashsale"
)

// Sentinel errors. Callers test them with errors.Is; the returned errors wrap
// them with the operation and ids.
var (
	ErrNotFound   error = &flashsale.Error{Code: flashsale.OrderNotFound, Message: "not found"}
	ErrUnknownSKU error = &flashsale.Error{Code: flashsale.UnknownSKU, Message: "unknown sku"}
	// ErrInsufficientStock means MySQL has fewer available units than Redis
	// let through: Redis drifted and must be reconciled.
	ErrInsufficientStock error = &flashsale.Error{Code: flashsale.StockDrift, Message: "insufficient stock"}
	ErrOrderClosed       error = &flashsale.Error{Code: flashsale.OrderClosed, Message: "order closed"}
	ErrOrderPaid         error = &flashsale.Error{Code: flashsale.AlreadyPaid, Message: "order already paid"}
	ErrAmountMismatch    error = &flashsale.Error{Code: flashsale.AmountMismatch, Message: "amount mismatch"}
	ErrSKUInUse          error = &flashsale.Error{Code: flashsale.SKUInUse, Message: "sku has unpaid reservations"}
	// ErrLimitExceeded means the order would give the user more units of a
	// SKU than its per_user_limit allows. Nothing was written.
	ErrLimitExceeded error = &flashsale.Error{Code: flashsale.LimitExceeded, Message: "per-user limit exceeded"}
	// ErrInvalidArgument marks input that can never succeed (empty ids,
	// non-positive quantities, ...). Retrying it is pointless, so a Temporal
	// activity should report it as non-retryable.
	ErrInvalidArgument error = &flashsale.Error{Code: flashsale.Invalid, Message: "invalid argument"}
	// ErrTransactionConflict means the payment's transaction id is already
	// recorded for another order. Nothing was written for this order, which
	// is unchanged and still payable with another transaction; the money
	// belongs to the order that recorded it first. The error is a
	// *TransactionConflictError naming that order.
	ErrTransactionConflict error = &flashsale.Error{Code: flashsale.TransactionConflict, Message: "transaction already recorded for another order"}
	// ErrPermanent marks a database answer that will be the same on every
	// retry (a CHECK constraint, a duplicate key no code path expects, a
	// value out of range or too long, a broken foreign key). The statement
	// rolled back. It is kept apart from ErrInvalidArgument because the
	// caller's input may be fine: the stored data or the code is wrong, an
	// operator has to look. Temporal activities report it as non-retryable
	// unless they are compensation, which must keep trying. Deadlocks, lock
	// wait timeouts and connection errors are never ErrPermanent.
	ErrPermanent error = &flashsale.Error{Code: flashsale.Permanent, Message: "permanent database error"}
)

// TransactionConflictError is the ErrTransactionConflict of one payment:
// TransactionID was offered for OrderID but is recorded for RecordedFor.
type TransactionConflictError struct {
	TransactionID string
	OrderID       string
	RecordedFor   string
}

func (e *TransactionConflictError) Error() string {
	return fmt.Sprintf("transaction %s is recorded for order %s, not order %s", e.TransactionID, e.RecordedFor, e.OrderID)
}

// Unwrap makes errors.Is(err, ErrTransactionConflict) hold.
func (e *TransactionConflictError) Unwrap() error { return ErrTransactionConflict }

// Status is the lifecycle state of an order.
type Status string

// Order states. PENDING_PAYMENT is the only open state; the other three are
// final.
const (
	StatusPendingPayment Status = "PENDING_PAYMENT"
	StatusPaid           Status = "PAID"
	StatusExpired        Status = "EXPIRED"
	StatusCancelled      Status = "CANCELLED"
)

// PaymentStatus says what happened to money that arrived.
type PaymentStatus string

// Payment outcomes: CAPTURED paid the order; REFUND_REQUIRED money must be
// returned to the payer (order closed, already paid, or unknown).
const (
	PaymentCaptured       PaymentStatus = "CAPTURED"
	PaymentRefundRequired PaymentStatus = "REFUND_REQUIRED"
)

// Field limits, mirroring the column sizes so bad input fails validation
// instead of a strict-mode "data too long" error deep in a transaction.
const (
	maxIDLen     = 64
	maxTxnIDLen  = 128
	maxReasonLen = 255
	maxBuckets   = 1024
)

// SKU is the definition written by PutSKU.
type SKU struct {
	ID           string
	Total        int64
	Price        int64 // minor currency units
	Buckets      int   // Redis stock buckets, 1..1024
	PerUserLimit int
}

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
}

// Item is one line of an order. UnitPrice is filled by the store from the
// inventory price at reservation time and ignored on input.
type Item struct {
	SKU       string `json:"sku_id"`
	Quantity  int64  `json:"quantity"`
	UnitPrice int64  `json:"unit_price"`
}

// Payment is money received for an order.
type Payment struct {
	TransactionID string        `json:"transaction_id"`
	OrderID       string        `json:"order_id"`
	Amount        int64         `json:"amount"`
	Status        PaymentStatus `json:"status"`
	Reason        string        `json:"reason,omitempty"`
	CreatedAt     time.Time     `json:"created_at"`
}

// Order is an order with its items (by sku) and payments (in arrival order).
type Order struct {
	OrderID string    `json:"order_id"`
	UserID  string    `json:"user_id"`
	Status  Status    `json:"status"`
	Amount  int64     `json:"amount"`
	PayBy   time.Time `json:"pay_by"`
	Reason  string    `json:"reason,omitempty"`
	// Degraded: reserved in MySQL alone while Redis was unreachable.
	Degraded  bool       `json:"degraded,omitempty"`
	Items     []Item     `json:"items"`
	Payments  []Payment  `json:"payments"`
	CreatedAt time.Time  `json:"created_at"`
	ClosedAt  *time.Time `json:"closed_at,omitempty"`
}

// NewOrder is the input of CreateOrder. Items need SKU and Quantity.
type NewOrder struct {
	OrderID string    `json:"order_id"`
	UserID  string    `json:"user_id"`
	Items   []Item    `json:"items"`
	PayBy   time.Time `json:"pay_by"`
	// Degraded marks an order reserved without Redis (it took nothing from
	// the buckets). Creating or closing it flags its SKUs for a Redis
	// resync (Inventory.RedisResync).
	Degraded bool `json:"degraded,omitempty"`
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
