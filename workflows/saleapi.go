package workflows

import (
	"time"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/activities/contract"
)

// The contract of SaleWorkflow, one per SKU with a fair sale
// (docs/design/fair-sale.md): its id, the operators' Updates, its input and
// its view. Buyers never reach it; they reach Redis (internal/sale).

// SaleWorkflowID is the workflow id of sku's sale: one sale of a SKU at a
// time.
func SaleWorkflowID(sku string) string { return "sale-" + sku }

// Names a person reading the Temporal Web UI sees on a sale's events.
const (
	// UpdateSaleOpen opens the sale now instead of at opens_at.
	UpdateSaleOpen = "open"
	// UpdateSalePause stops new passes and buys; placed orders go on.
	UpdateSalePause = "pause"
	// UpdateSaleResume lifts a pause.
	UpdateSaleResume = "resume"
	// UpdateSaleClose ends the sale: nothing is sold from then on; once
	// its last order has settled the workflow checks MySQL and Redis
	// agree, reports the sale and removes its Redis keys.
	UpdateSaleClose = "close"
	// UpdateSaleVoid closes the sale (also a closed one still settling),
	// cancels every order of it still unpaid and refunds the paid ones;
	// every unit goes back.
	UpdateSaleVoid = "void"
	// UpdateSaleClosesAt moves the sale's end (SaleEndChange): later to
	// extend it, sooner to shorten it; answered once every API instance
	// will refuse a buy from the new end on.
	UpdateSaleClosesAt = "closes_at"
	// QuerySale returns the SaleView.
	QuerySale = "sale"
)

// DefaultPassTTL is how long a pass may be spent after it was issued, for
// a sale started without its own (SaleInput.PassTTL).
const DefaultPassTTL = 60 * time.Second

// SaleInput starts a SaleWorkflow: the sale's terms.
type SaleInput = contract.SaleTerms

// SaleControl is the argument of every operator Update: why, for the
// audit trail.
type SaleControl struct {
	Reason string `json:"reason,omitempty"`
}

// SaleEndChange is the closes_at Update's argument: the sale's new end,
// after now and after opens_at, and why.
type SaleEndChange struct {
	ClosesAt time.Time `json:"closes_at"`
	Reason   string    `json:"reason,omitempty"`
}

// SaleView is the sale as the workflow knows it: the answer of every
// Update, QuerySale's, and the workflow's result.
type SaleView struct {
	SKU     string              `json:"sku_id"`
	State   flashsale.SaleState `json:"state"`
	OpensAt time.Time           `json:"opens_at"`
	// ClosesAt is the sale's end, zero for a sale closed by hand;
	// Unqueued marks the end of a SKU sold without a queue (sku close).
	ClosesAt time.Time `json:"closes_at,omitzero"`
	Unqueued bool      `json:"unqueued,omitempty"`
	// OpenedAt is when the sale opened (the timer or an open Update).
	OpenedAt time.Time `json:"opened_at,omitzero"`
	ClosedAt time.Time `json:"closed_at,omitzero"`
	// Preflight lists the go/no-go's failing checks: the sale opened
	// PAUSED because of them (resume once they are fixed).
	Preflight []contract.PreflightCheck `json:"preflight,omitempty"`
	// SeedHash is the commitment published before anyone entered; Seed
	// is revealed at the open, with Entrants, the buyers it ranked.
	SeedHash string `json:"seed_hash,omitempty"`
	Seed     string `json:"seed,omitempty"`
	Entrants int64  `json:"entrants,omitempty"`
	// Voided is set by the void Update, with the orders it cancelled and
	// the paid orders it refunded.
	Voided    bool `json:"voided,omitempty"`
	Cancelled int  `json:"cancelled,omitempty"`
	Refunded  int  `json:"refunded,omitempty"`
	// Settling: the sale is closed and waits for its last orders to settle
	// (a void is still accepted); Ending: they have, and the sale is being
	// checked, reported and removed from Redis.
	Settling bool `json:"settling,omitempty"`
	Ending   bool `json:"ending,omitempty"`
	// EndedAt is when MySQL marked the sale ended (its Redis keys removed
	// from then on), and Report its final report: both set once the sale
	// has ended, the workflow's result.
	EndedAt time.Time            `json:"ended_at,omitzero"`
	Report  *contract.SaleReport `json:"report,omitempty"`
}
