package audit

// What Check reports: the kinds of breach, each violation, and the state
// of every SKU it looked at.

import (
	"time"

	"github.com/flashsale/flashsale/activities/contract"
	"github.com/flashsale/flashsale/internal/orderdb"
)

// Kind names the invariant a violation breaks. Expected and Actual hold
// numbers (units, counts) or strings (statuses, times), as each kind says.
type Kind string

// Violation kinds.
const (
	// KindNegative: total, available, frozen or sold below zero.
	// Expected 0, Actual the value.
	KindNegative Kind = "negative"
	// KindBalance: available + frozen + sold != total. Expected total,
	// Actual the sum.
	KindBalance Kind = "balance"
	// KindFrozen: frozen != units of PENDING_PAYMENT orders. Expected the
	// order units, Actual frozen.
	KindFrozen Kind = "frozen_vs_pending_orders"
	// KindSold: sold != units of PAID orders of the current sale.
	// Expected the order units, Actual sold.
	KindSold Kind = "sold_vs_paid_orders"
	// KindJournalReplay: the journal does not replay to the row. Expected
	// what the journal says, Actual the row's value; Detail the column.
	KindJournalReplay Kind = "journal_replay"
	// KindJournalChain: journal entries that do not follow from the entry
	// before. Expected 0, Actual the count.
	KindJournalChain Kind = "journal_chain"
	// KindOrderJournal: an order's journal entries disagree with its
	// status. Expected and Actual are the entry types.
	KindOrderJournal Kind = "order_journal"
	// KindCapturedNotPaid: CAPTURED money on an order that is not PAID.
	// Expected "PAID", Actual the order status ("" when no order exists).
	KindCapturedNotPaid Kind = "captured_payment_on_unpaid_order"
	// KindPaymentStatus: a payment neither CAPTURED nor REFUND_REQUIRED.
	KindPaymentStatus Kind = "payment_status"
	// KindCapturedAmount: a CAPTURED payment for another amount than the
	// order's. Expected the order amount, Actual the payment's.
	KindCapturedAmount Kind = "captured_amount"
	// KindPaidCaptures: a PAID order without exactly one CAPTURED payment.
	// Expected 1, Actual the count.
	KindPaidCaptures Kind = "paid_order_captures"
	// KindReceivedNotKept: money received by the order's deadline, the
	// order closed unpaid, and no payment row answers it.
	KindReceivedNotKept Kind = "payment_received_in_time_not_kept"
	// KindRefundNotOwed: an order refunded after it was paid whose money
	// is not all owed back (REFUND_REQUIRED) or sent back (REFUNDED).
	// Expected the order amount, Actual what is owed or sent.
	KindRefundNotOwed Kind = "refund_not_owed"
	// KindMoneyBalance: the CAPTURED money differs from the amounts of the
	// PAID orders. Expected the orders' sum, Actual the captured sum.
	KindMoneyBalance Kind = "money_balance"
	// KindRedisMissing: Redis has no buckets for a SKU MySQL sells; buyers
	// get UNKNOWN_SKU. Expected db available, Actual 0.
	KindRedisMissing Kind = "redis_missing"
	// KindRedisNegative: a bucket holds a negative count. Expected 0,
	// Actual the number of such buckets.
	KindRedisNegative Kind = "redis_negative_bucket"
	// KindRedisOver: Redis buckets plus in-flight units exceed db
	// available: Redis admits buyers MySQL must refuse. Expected db
	// available, Actual buckets + in flight.
	KindRedisOver Kind = "redis_over_db"
	// KindRedisUnder: Redis buckets plus in-flight units fall short of db
	// available: buyers are told sold out while stock exists.
	KindRedisUnder Kind = "redis_under_db"
	// KindOrderOverdue: a PENDING_PAYMENT order past pay_by + grace.
	// Expected the close-by time, Actual the status.
	KindOrderOverdue Kind = "order_overdue"
	// KindWorkflowOverdue: an order workflow still running past pay_by +
	// grace (or past the reserve budget with no order row). Expected the
	// close-by time, Actual "Running".
	KindWorkflowOverdue Kind = "workflow_overdue"
)

// Violation is one breach of an invariant.
type Violation struct {
	SKU           string `json:"sku_id"`
	OrderID       string `json:"order_id,omitempty"`
	TransactionID string `json:"transaction_id,omitempty"`
	Kind          Kind   `json:"kind"`
	Expected      any    `json:"expected"`
	Actual        any    `json:"actual"`
	Detail        string `json:"detail"`
}

// SKUState is what the checker saw of one SKU.
type SKUState struct {
	SKU          string `json:"sku_id"`
	Total        int64  `json:"total"`
	Available    int64  `json:"available"`
	Frozen       int64  `json:"frozen"`
	Sold         int64  `json:"sold"`
	PendingUnits int64  `json:"pending_units"`
	PaidUnits    int64  `json:"paid_units"`
	// Redis is the reconciler's observation of the SKU.
	Redis         contract.StockObservation `json:"redis"`
	OpenWorkflows int                       `json:"open_workflows"`
}

// Oversold counts units sold beyond the stock or without a paid order to
// show for them.
func (s SKUState) Oversold() int64 {
	return max(0, s.Sold-s.Total) + absDiff(s.PaidUnits, s.Sold)
}

// Undersold counts units a settled sale lost, for a sale whose buyers
// outnumbered its units and kept trying to the end (the fault and scale-out
// suites): units neither sold, on sale nor frozen, Redis short of MySQL, and
// any unit left unsold.
func (s SKUState) Undersold() int64 {
	return absDiff(s.Total, s.Sold+s.Available+s.Frozen) + max(0, s.Redis.Drift) + (s.Total - s.Sold)
}

func absDiff(a, b int64) int64 {
	if a > b {
		return a - b
	}
	return b - a
}

// Report is the outcome of Check.
type Report struct {
	CheckedAt  time.Time   `json:"checked_at"`
	OK         bool        `json:"ok"`
	SKUs       []SKUState  `json:"skus"`
	Violations []Violation `json:"violations"`
	// Money balances the payments: captured (equal to the PAID orders'
	// amounts), owed back and sent back.
	Money orderdb.Money `json:"money"`
	// Warnings are things the checker could not judge, such as a Redis
	// snapshot torn by a live sale.
	Warnings []string `json:"warnings,omitempty"`
}
