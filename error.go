package flashsale

import (
	"errors"
	"fmt"
)

// Code names an outcome every layer agrees on: why a request was refused,
// why an order was rejected or closed, why a payment must be refunded.
// Codes are stable strings: HTTP clients branch on them, order views and
// recorded workflow histories carry them. Each door maps them once: HTTP to
// a status (internal/httpapi/errors.go), Temporal to an activity error type
// (activities/contract/errors.go), the CLI prints them as they are.
type Code string

// Refusals of a request or an order.
const (
	// Invalid: input that can never succeed (an id out of the alphabet, a
	// quantity out of range, a request id reused with another quantity).
	Invalid Code = "INVALID_REQUEST"
	// Internal: anything no other code describes. Its text stays in the
	// logs; a client is told only "internal error".
	Internal Code = "INTERNAL"
	// Unavailable: a dependency (Redis, MySQL, Temporal) did not answer in
	// time. Nothing changed; the request may be retried as it is.
	Unavailable Code = "UNAVAILABLE"
	// Permanent: a database answer that will be the same on every retry (a
	// CHECK constraint, a value out of range). The input may be fine: the
	// stored data or the code is wrong, and an operator has to look. Never
	// a deadlock, a lock wait timeout or a lost connection.
	Permanent Code = "PERMANENT_FAILURE"

	UnknownSKU     Code = "UNKNOWN_SKU"
	SoldOut        Code = "SOLD_OUT"
	LimitExceeded  Code = "LIMIT_EXCEEDED"
	OrderNotFound  Code = "ORDER_NOT_FOUND"
	OrderClosed    Code = "ORDER_CLOSED"
	AlreadyPaid    Code = "ALREADY_PAID"
	AmountMismatch Code = "AMOUNT_MISMATCH"
	// OrderIDConflict: the order id is taken by another buyer's order.
	OrderIDConflict Code = "ORDER_ID_CONFLICT"
	// TransactionConflict: the payment's transaction id is recorded for
	// another order; the money is that order's.
	TransactionConflict Code = "TRANSACTION_CONFLICT"
	// StockDrift: Redis let units through that MySQL does not have (Redis
	// drifted and must be reconciled). To a buyer it is sold out.
	StockDrift Code = "STOCK_DRIFT"
	// AlreadyReleased: the units an order held went back already; the
	// order cannot take them again.
	AlreadyReleased Code = "ALREADY_RELEASED"
	// PaymentReceived: money for the order arrived before its deadline and
	// has not been applied; the order must not close.
	PaymentReceived Code = "PAYMENT_RECEIVED"

	// Admission at the edge.
	RateLimited Code = "RATE_LIMITED"
	Busy        Code = "BUSY"

	// Operating a SKU.
	SKUInUse        Code = "SKU_IN_USE"
	PreheatMismatch Code = "PREHEAT_MISMATCH"
	ResizeBusy      Code = "RESIZE_IN_PROGRESS"

	// The waitlist of a sold-out SKU.
	NotSoldOut    Code = "NOT_SOLD_OUT"
	WaitlistFull  Code = "WAITLIST_FULL"
	NotOnWaitlist Code = "NOT_ON_WAITLIST"

	// A fair sale's queue and passes (docs/design/fair-sale.md).
	NoSale     Code = "NO_SALE"
	NotInQueue Code = "NOT_IN_QUEUE"
	// QueueFull: the sale's queue holds its max_entrants buyers.
	QueueFull    Code = "QUEUE_FULL"
	SaleNotOpen  Code = "SALE_NOT_OPEN"
	SalePaused   Code = "SALE_PAUSED"
	SaleClosed   Code = "SALE_CLOSED"
	PassRequired Code = "PASS_REQUIRED"
	PassForeign  Code = "PASS_FOREIGN"
	PassUsed     Code = "PASS_USED"
	PassExpired  Code = "PASS_EXPIRED"
	// SaleStateConflict: an operator's control that the sale's state does
	// not allow (pause a sale that is not open, open one already open).
	SaleStateConflict Code = "SALE_STATE_CONFLICT"

	// Unauthenticated: no usable buyer token (internal/identity). The HTTP
	// door's own refusals, such as a wrong admin token, a body naming
	// another buyer, a bad signature or an unknown route, are its codes:
	// internal/httpapi/codes.go.
	Unauthenticated Code = "UNAUTHENTICATED"
)

// Why an order closed without being paid.
const (
	PaymentTimeout  Code = "PAYMENT_TIMEOUT"
	CancelledByUser Code = "CANCELLED_BY_BUYER"
)

// Why money must go back to the payer (with AmountMismatch, OrderClosed,
// AlreadyPaid).
const (
	UnknownOrder Code = "UNKNOWN_ORDER"
	// PaymentFailed: the database refused the payment for good; nothing was
	// captured.
	PaymentFailed Code = "PAYMENT_FAILED"
)

// Error is a failure with a code. Message is written for the person who
// sent the request (it names their own ids, never a host, a query or a
// stack); the operation that failed is added by wrapping, and reaches the
// logs only.
type Error struct {
	Code    Code
	Message string
}

// Errorf returns an *Error with a formatted message.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

func (e *Error) Error() string {
	if e.Message == "" {
		return string(e.Code)
	}
	return e.Message
}

// Is matches another *Error of the same code, so a test or a caller can ask
// errors.Is(err, &flashsale.Error{Code: flashsale.SoldOut}).
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// ErrorCode is the code of the first *Error in err's chain: "" for nil,
// Internal for an error without one.
func ErrorCode(err error) Code {
	if err == nil {
		return ""
	}
	if e, ok := errors.AsType[*Error](err); ok {
		return e.Code
	}
	return Internal
}

// ErrorMessage is the message of the first *Error in err's chain, or
// "internal error" for an error without one: only an *Error's message is
// written to be shown.
func ErrorMessage(err error) string {
	if e, ok := errors.AsType[*Error](err); ok && e.Message != "" {
		return e.Message
	}
	return "internal error"
}
