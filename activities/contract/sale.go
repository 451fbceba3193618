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

// PrepareSaleInput creates a sale.
type PrepareSaleInput struct {
	SKU     string        `json:"sku_id"`
	SaleID  string        `json:"sale_id"`
	OpensAt time.Time     `json:"opens_at"`
	PassTTL time.Duration `json:"pass_ttl"`
}

// PreparedSale is the sale's published commitment.
type PreparedSale struct {
	SeedHash string `json:"seed_hash"`
}

// SaleRequest names a sale.
type SaleRequest struct {
	SKU string `json:"sku_id"`
}

// OpenedSale is what opening a sale did (OpenSale; internal/sale's
// Opened, the same JSON).
type OpenedSale struct {
	// Entrants is how many buyers entered before the freeze.
	Entrants int64 `json:"entrants"`
	// Seed is the revealed seed: with the entrants' ids, sale.Ranks
	// reproduces every rank.
	Seed string `json:"seed"`
	// State is the sale's state after the call: OPEN, or PAUSED or CLOSED
	// for a sale opened before.
	State flashsale.SaleState `json:"state"`
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
