package contract

import (
	"time"

	"github.com/flashsale/flashsale"
)

// A fair sale's activities (SaleWorkflow), as the worker registers them
// (methods of activities.Activities).
const (
	PrepareSale      = "PrepareSale"
	OpenSale         = "OpenSale"
	SetSaleState     = "SetSaleState"
	CancelSaleOrders = "CancelSaleOrders"
)

// SaleTerms are a fair sale's terms: workflows.SaleInput starts a
// SaleWorkflow with them, and PrepareSaleInput carries them to Redis.
type SaleTerms struct {
	SKU string `json:"sku_id"`
	// OpensAt is when the pre-queue is shuffled and buying starts, by the
	// Temporal server's clock (the workflow's timer).
	OpensAt time.Time `json:"opens_at"`
	// PassTTL is how long a pass may be spent; zero means
	// workflows.DefaultPassTTL (the workflow resolves it before
	// PrepareSale, so a PrepareSaleInput always has one).
	PassTTL time.Duration `json:"pass_ttl,omitempty"`
	// MaxEntrants caps the buyers the queue takes (its memory in Redis);
	// zero means sale.DefaultMaxEntrants.
	MaxEntrants int64 `json:"max_entrants,omitempty"`
	// ClosesAt, when set, is the sale's end: from then on no pass is
	// spent (the spend script reads it by Redis's clock, so no API
	// instance sells past it), and the workflow's timer closes the sale
	// and ends it. The closes_at Update moves it. Zero: closed by hand.
	ClosesAt time.Time `json:"closes_at,omitzero"`
	// Unqueued: the SKU is sold without a queue, and this sale only ends
	// its selling (`starter sku close`): it is closed as it starts, and
	// ends as a fair sale does. Since is then when the SKU's selling
	// began (its last PUT): the report counts the orders since.
	Unqueued bool      `json:"unqueued,omitempty"`
	Since    time.Time `json:"since,omitzero"`
	// ExpectedPeak is the buy requests per second the sale expects at its
	// peak, which the go/no-go before the open sizes the buckets and API
	// instances against (zero: not checked).
	ExpectedPeak int64 `json:"expected_peak_rps,omitempty"`
}

// SetSaleEnd moves a sale's closes_at in Redis (SetSaleEndInput).
const SetSaleEnd = "SetSaleEnd"

// SetSaleEndInput is a sale's new end.
type SetSaleEndInput struct {
	SKU      string    `json:"sku_id"`
	ClosesAt time.Time `json:"closes_at"`
}

// PrepareSaleInput creates a sale: its terms and the id of the workflow
// run that holds it.
type PrepareSaleInput struct {
	SaleTerms
	SaleID string `json:"sale_id"`
}

// PreparedSale is the sale's published commitment.
type PreparedSale struct {
	SeedHash string `json:"seed_hash"`
}

// SaleRequest names a sale.
type SaleRequest struct {
	SKU string `json:"sku_id"`
}

// SaleStateChange moves a sale from one of From to To.
type SaleStateChange struct {
	SKU  string                `json:"sku_id"`
	To   flashsale.SaleState   `json:"to"`
	From []flashsale.SaleState `json:"from"`
}

// VoidedOrders is what CancelSaleOrders did.
type VoidedOrders struct {
	// Cancelled is how many running orders of the SKU were sent a cancel.
	Cancelled int `json:"cancelled"`
}

// The end of a fair sale (issue 23): a void's refunds, and a closed sale's
// wait for its last order, check, report, mark and removal of its keys.
const (
	RefundSaleOrders = "RefundSaleOrders"
	AwaitSaleSettled = "AwaitSaleSettled"
	CheckSaleStock   = "CheckSaleStock"
	ReportSale       = "ReportSale"
	EndSale          = "EndSale"
	RemoveSaleKeys   = "RemoveSaleKeys"
)

// RefundSaleInput names a voided sale's orders: those holding SKU created
// since the sale started.
type RefundSaleInput struct {
	SKU    string    `json:"sku_id"`
	Since  time.Time `json:"since"`
	Reason string    `json:"reason"`
}

// RefundedOrders is what RefundSaleOrders did.
type RefundedOrders struct {
	// Refunded is how many paid orders this call refunded.
	Refunded int `json:"refunded"`
}

// SaleSettled is what AwaitSaleSettled saw last.
type SaleSettled struct {
	// Looks is how many times it looked.
	Looks int `json:"looks"`
}

// SaleReportInput names a sale for its report: its SKU's orders created
// since the sale started.
type SaleReportInput struct {
	SKU   string    `json:"sku_id"`
	Since time.Time `json:"since"`
}

// SaleReport is a sale's final report, SaleWorkflow's result: what was
// sold, for how much, what is owed back, and how fair it was.
type SaleReport struct {
	// UnitsSold are the units of the sale's PAID orders; Orders counts
	// the sale's orders by status.
	UnitsSold int64                      `json:"units_sold"`
	Orders    map[flashsale.Status]int64 `json:"orders"`
	// Revenue is the money captured for paid orders (minor units).
	Revenue int64 `json:"revenue"`
	// Refunds and RefundAmount are the payments recorded for refund (late
	// money, second payments, and a void's refunds); RefundedOrders the
	// paid orders a void refunded.
	Refunds        int64 `json:"refunds_required"`
	RefundAmount   int64 `json:"refund_required_amount"`
	RefundedOrders int64 `json:"void_refunded_orders"`
	// Available is the SKU's units left, in MySQL and Redis alike (the
	// check before the report).
	Available int64 `json:"available"`
	// Fairness is the queue's figures; nil when the sale's queue was gone
	// already.
	Fairness *SaleFairness `json:"fairness,omitempty"`
}

// SaleFairness is the queue's account of a sale.
type SaleFairness struct {
	// Entrants were ranked by the shuffle; Queued is everyone in the
	// queue (entrants and later arrivals, FIFO).
	Entrants int64 `json:"entrants"`
	Queued   int64 `json:"queued"`
	// PassesIssued is the serving counter (one pass per rank served);
	// PassesUsed bought their unit; PassesExpired ran out unused (their
	// units went to the next rank); PassesUnused were still outstanding
	// at the close.
	PassesIssued  int64 `json:"passes_issued"`
	PassesUsed    int64 `json:"passes_used"`
	PassesExpired int64 `json:"passes_expired"`
	PassesUnused  int64 `json:"passes_unused"`
}

// EndedSale is when a sale ended (EndSale).
type EndedSale struct {
	EndedAt time.Time `json:"ended_at"`
}

// RemoveSaleKeysInput is the sale whose keys go: its SKU and the end
// EndSale recorded.
type RemoveSaleKeysInput struct {
	SKU     string    `json:"sku_id"`
	EndedAt time.Time `json:"ended_at"`
}

// RemovedSaleKeys is what RemoveSaleKeys did.
type RemovedSaleKeys struct {
	// Removed counts the keys this attempt removed (an attempt cut short
	// by a crash removed the others).
	Removed int64 `json:"removed"`
	// Reopened: the SKU went on sale again before every key was removed;
	// the new sale's keys were left alone.
	Reopened bool `json:"reopened,omitempty"`
}
