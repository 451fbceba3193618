package contract

import (
	"errors"
	"slices"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/flashsale/flashsale"
)

// errorTypes is the Temporal door's one mapping: the flashsale code of a
// business answer and the type of the non-retryable application error that
// carries it to the workflow. The type strings are written into every
// recorded history (workflows/testdata) and matched by the retry policies
// of running orders: they never change. A type names one code on the way
// back (CodeOf): the first row that has it.
var errorTypes = []struct {
	code flashsale.Code
	typ  string
}{
	{flashsale.SoldOut, "SoldOut"},
	{flashsale.UnknownSKU, "UnknownSKU"},
	{flashsale.StockDrift, "StockDrift"},
	{flashsale.AmountMismatch, "AmountMismatch"},
	{flashsale.AlreadyPaid, "OrderPaid"},
	{flashsale.OrderClosed, "OrderClosed"},
	// Input that can never succeed.
	{flashsale.Invalid, "InvalidRequest"},
	// MySQL refused the order: the buyer would hold more units of a SKU
	// than its per-user limit. The Redis units the order took are real
	// (unlike StockDrift) and must be given back.
	{flashsale.LimitExceeded, "LimitExceeded"},
	// The payment's transaction id is recorded for another order
	// (TransactionConflictDetails names it). Nothing was written for this
	// order; the money is the other order's, neither captured nor refunded.
	{flashsale.TransactionConflict, "TransactionConflict"},
	// CloseOrder found a payment our door received by the order's deadline
	// that the order has not handled (PaymentReceivedDetails names it).
	// Nothing was closed; the workflow applies the payment instead.
	{flashsale.PaymentReceived, "PaymentReceived"},
	// CreateOrder found the order id taken by an order of another buyer
	// or other lines: nothing was written, and the Redis units the new
	// order took are given back.
	{flashsale.OrderIDConflict, "OrderIDConflict"},
	// A fair sale (SaleWorkflow): an operator's control its state does not
	// allow, and a sale whose Redis state is gone.
	{flashsale.SaleStateConflict, "SaleStateConflict"},
	{flashsale.NoSale, "NoSale"},
	// ExtendHold: the order's hold was extended once already.
	{flashsale.HoldExtended, "HoldExtended"},

	// One way only. A database answer no retry can change travels as
	// InvalidRequest: the same statement would fail the same way forever,
	// retrying it only holds the order, and the workflow treats both alike.
	{flashsale.Permanent, "InvalidRequest"},
	// To a buyer, units their order already gave back are sold out.
	{flashsale.AlreadyReleased, "SoldOut"},
}

// TypeFor is the application error type that carries code, or "" for a
// code no activity answers with (those stay retryable errors).
func TypeFor(code flashsale.Code) string {
	for _, e := range errorTypes {
		if e.code == code {
			return e.typ
		}
	}
	return ""
}

// CodeOf is the code of the activities' business answer in err (an
// application error of a type in the table), and false for any other error:
// a timeout, a dependency that did not answer, a cancellation.
func CodeOf(err error) (flashsale.Code, bool) {
	appErr, ok := errors.AsType[*temporal.ApplicationError](err)
	if !ok {
		return "", false
	}
	for _, e := range errorTypes {
		if e.typ == appErr.Type() {
			return e.code, true
		}
	}
	return "", false
}

// NonRetryableErrorTypes lists every type of the table once, for the retry
// policies: retrying "sold out" only burns time.
var NonRetryableErrorTypes = func() []string {
	var types []string
	for _, e := range errorTypes {
		if !slices.Contains(types, e.typ) {
			types = append(types, e.typ)
		}
	}
	return types
}()

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

// SoldOutDetails is attached to a SoldOut or UnknownSKU error.
type SoldOutDetails struct {
	SKU string `json:"sku_id"`
}

// StockDriftDetails is attached to a StockDrift error: the SKUs whose MySQL
// stock was short although Redis had reserved the units. The other items'
// Redis units are real and must be given back.
type StockDriftDetails struct {
	DriftedSKUs []string `json:"drifted_skus"`
}
