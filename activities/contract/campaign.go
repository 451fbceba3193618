package contract

import "time"

// A campaign (docs/sale-day.md, "Campaigns"): several SKUs sold together,
// each at a flash price from an allocation carved from its stock, as a
// fair sale of its own (workflows.CampaignWorkflow's children). Its
// activities are catalog.CampaignSteps' methods.
const (
	// CarveCampaign carves each item's allocation from its SKU and defines
	// the item's campaign SKU (queued, at the flash price, with the
	// per-buyer limit), its Redis stock preheated.
	CarveCampaign = "CarveCampaign"
	// ControlCampaign sends one Update to every item's sale.
	ControlCampaign = "ControlCampaign"
	// ReturnCampaignStock gives what is left of each ended item's
	// allocation back to its SKU.
	ReturnCampaignStock = "ReturnCampaignStock"
)

// CampaignItem is one SKU of a campaign.
type CampaignItem struct {
	SKU string `json:"sku_id"`
	// FlashPrice is what a campaign order pays per unit (minor units).
	FlashPrice int64 `json:"flash_price"`
	// Allocation is carved from the SKU's available stock when the
	// campaign starts; what did not sell goes back when it ends.
	Allocation int64 `json:"allocation"`
	// PerUserLimit caps the units one buyer may buy of it: 1 (0 means 1).
	// The doors refuse more (workflows.CheckCampaign): a fair sale's pass
	// buys one unit.
	PerUserLimit int `json:"per_user_limit,omitempty"`
}

// CampaignTerms start a campaign (workflows.CampaignInput).
type CampaignTerms struct {
	ID       string         `json:"campaign_id"`
	OpensAt  time.Time      `json:"opens_at"`
	ClosesAt time.Time      `json:"closes_at"`
	Items    []CampaignItem `json:"items"`
	// PassTTL is each item's sale's (zero: the default).
	PassTTL time.Duration `json:"pass_ttl,omitempty"`
}

// CampaignSKU is the SKU a campaign sells item sku as: its own stock (the
// allocation), price (the flash price) and per-buyer limit, sold through a
// fair sale. Buyers buy it by this id.
func CampaignSKU(campaign, sku string) string { return sku + "_" + campaign }

// CarveCampaignInput is the campaign to carve: its id and items.
type CarveCampaignInput struct {
	ID    string         `json:"campaign_id"`
	Items []CampaignItem `json:"items"`
}

// CarvedCampaign is what CarveCampaign did.
type CarvedCampaign struct {
	// SKUs are the items' campaign SKUs, in the items' order.
	SKUs []string `json:"sku_ids"`
}

// ControlCampaignInput is one Update (an action of the sale workflow) for
// every campaign SKU.
type ControlCampaignInput struct {
	SKUs   []string `json:"sku_ids"`
	Action string   `json:"action"`
	Reason string   `json:"reason,omitempty"`
}

// ControlledCampaign is how many items' sales took the Update (the others
// were in a state that did not allow it, or had ended).
type ControlledCampaign struct {
	Applied int `json:"applied"`
}

// ReturnCampaignInput gives back, per item, what is left of its
// allocation: Left[i] units of Items[i]'s campaign SKU to its SKU.
type ReturnCampaignInput struct {
	ID    string         `json:"campaign_id"`
	Items []CampaignItem `json:"items"`
	Left  []int64        `json:"left"`
}

// ReturnedCampaignStock is what ReturnCampaignStock gave back, per item.
type ReturnedCampaignStock struct {
	Returned []int64 `json:"returned"`
}
