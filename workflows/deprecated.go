package workflows

import (
	"github.com/flashsale/flashsale"
)

// The names below are the workflows package's old vocabulary, kept only
// while other packages move to the flashsale root. Nothing in workflows/
// uses them; delete them once `grep -rn 'workflows\.<Name>'` finds no
// caller.

// Deprecated: use flashsale.Item.
type Item = flashsale.Item

// Deprecated: use flashsale.Status.
type Status = flashsale.Status

// Deprecated: use the flashsale.Status constants.
const (
	StatusReserving      = flashsale.StatusReserving
	StatusRejected       = flashsale.StatusRejected
	StatusPendingPayment = flashsale.StatusPendingPayment
	StatusPaid           = flashsale.StatusPaid
	StatusExpired        = flashsale.StatusExpired
	StatusCancelled      = flashsale.StatusCancelled
	StatusStalled        = flashsale.StatusStalled
)

// Deprecated: the reasons are flashsale codes; use them.
const (
	ReasonSoldOut        = string(flashsale.SoldOut)
	ReasonUnknownSKU     = string(flashsale.UnknownSKU)
	ReasonInvalid        = string(flashsale.Invalid)
	ReasonStockDrift     = string(flashsale.StockDrift)
	ReasonPaymentTimeout = string(flashsale.PaymentTimeout)
	ReasonBuyerCancelled = string(flashsale.CancelledByUser)
	ReasonUnavailable    = string(flashsale.Unavailable)
	ReasonLimitExceeded  = string(flashsale.LimitExceeded)

	RefundReasonAmountMismatch       = string(flashsale.AmountMismatch)
	RefundReasonOrderClosed          = string(flashsale.OrderClosed)
	RefundReasonAlreadyPaid          = string(flashsale.AlreadyPaid)
	RefundReasonUnknownOrder         = string(flashsale.UnknownOrder)
	RefundReasonPaymentFailed        = string(flashsale.PaymentFailed)
	PaymentReasonTransactionConflict = string(flashsale.TransactionConflict)
)

// Deprecated: use the flashsale limits.
const (
	MaxIDLength     = flashsale.MaxIDLength
	MaxItems        = flashsale.MaxItems
	MaxItemQuantity = flashsale.MaxItemQuantity
)

// Deprecated: use flashsale.WaitlistOrderPrefix.
const WaitlistOrderPrefix = flashsale.WaitlistOrderPrefix

// Deprecated: use flashsale.WaitlistOrderID.
func WaitlistOrderID(releasedOrderID string) string {
	return flashsale.WaitlistOrderID(releasedOrderID)
}

// ValidateInput applies the checks the workflow made before it validated
// with flashsale.Order.Validate: lengths, counts and quantities only, no id
// alphabet and no reserved prefix. Orders recorded before the change are
// judged by it on replay (see validateChangeID).
//
// Deprecated: use OrderInput.Validate (or flashsale.Order.Validate).
func ValidateInput(in OrderInput) error { return lengthsOnly(in) }

// SKUs lists the items' SKU ids, sorted, as the SkuIds search attribute
// holds them.
//
// Deprecated: use flashsale.Order.SKUs (line order) and sort.
func SKUs(items []flashsale.Item) []string {
	return sortedSKUs(flashsale.Order{Items: items})
}
