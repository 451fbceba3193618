package workflows

import (
	"time"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/activities/contract"
)

// The contract of CampaignWorkflow: its id, input, view and limits. Its
// Updates are the sale's controls by the same names (open, pause, resume,
// close, void), each sent to every item's sale.

// CampaignWorkflowID is the workflow id of campaign id.
func CampaignWorkflowID(id string) string { return "campaign-" + id }

// QueryCampaign returns the CampaignView.
const QueryCampaign = "campaign"

// A campaign's bounds: its id is short enough that every item's campaign
// SKU (contract.CampaignSKU) stays a SKU id, and its items few enough for
// one workflow's children.
const (
	MaxCampaignIDLength = 16
	MaxCampaignItems    = 200
)

// CampaignInput starts a CampaignWorkflow: the campaign's terms.
type CampaignInput = contract.CampaignTerms

// CampaignView is the campaign as its workflow knows it: every Update's
// answer, QueryCampaign's, and the workflow's result.
type CampaignView struct {
	ID       string              `json:"campaign_id"`
	State    flashsale.SaleState `json:"state"`
	OpensAt  time.Time           `json:"opens_at"`
	ClosesAt time.Time           `json:"closes_at"`
	Items    []CampaignItemView  `json:"items,omitempty"`
	Voided   bool                `json:"voided,omitempty"`
	// Total sums the items' reports and returns; Ended: every sale
	// ended and what was left went back.
	Total CampaignTotal `json:"total"`
	Ended bool          `json:"ended,omitempty"`
}

// CampaignItemView is one item: its terms, the SKU it is sold as, its
// sale's final report and the units given back to its SKU.
type CampaignItemView struct {
	contract.CampaignItem
	CampaignSKU string               `json:"campaign_sku_id"`
	Report      *contract.SaleReport `json:"report,omitempty"`
	Returned    int64                `json:"returned"`
}

// CampaignTotal is a campaign's report over its items.
type CampaignTotal struct {
	UnitsSold int64 `json:"units_sold"`
	Revenue   int64 `json:"revenue"`
	Refunds   int64 `json:"refunds"`
	Returned  int64 `json:"returned"`
}
