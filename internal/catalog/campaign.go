package catalog

import (
	"context"
	"fmt"

	"go.temporal.io/sdk/temporal"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/activities/contract"
)

// CampaignSteps are a campaign's activities (workflows.CampaignWorkflow),
// registered under the names in package contract: the carving of each
// item's allocation, a control sent to every item's sale, and the return
// of what is left. Each is idempotent: carves and returns are keyed by the
// item's campaign SKU, a control to a sale already in its state is skipped.
type CampaignSteps struct {
	Catalog Catalog
	Sales   Sales
}

// carveRef and returnRef key an item's carve and return in the journal
// (orderdb.Carve, orderdb.Restock).
func carveRef(child string) string  { return "cv-" + child }
func returnRef(child string) string { return "rt-" + child }

// CarveCampaign checks every item's SKU is idle (its Redis is reloaded
// after the carve), then for each: carves the allocation from its MySQL
// stock, defines the campaign SKU (the allocation, the flash price, the
// per-buyer limit, queued: nothing sells before its sale opens) with its
// Redis preheated, and reloads the SKU's Redis from MySQL. A SKU in use is
// retried (its orders settle); one unknown or short is refused.
func (c CampaignSteps) CarveCampaign(ctx context.Context, in contract.CarveCampaignInput) (contract.CarvedCampaign, error) {
	var out contract.CarvedCampaign
	for _, it := range in.Items {
		if _, err := c.Catalog.ensureIdle(ctx, it.SKU); err != nil {
			return out, campaignAnswer("carve "+it.SKU, err)
		}
	}
	for _, it := range in.Items {
		child := contract.CampaignSKU(in.ID, it.SKU)
		parent, _, err := c.Catalog.DB.Carve(ctx, it.SKU, it.Allocation, carveRef(child))
		if err != nil {
			return out, campaignAnswer("carve "+it.SKU, err)
		}
		def := flashsale.SKU{ID: child, Total: it.Allocation, Price: it.FlashPrice, Buckets: min(max(parent.Buckets, 1), int(it.Allocation)),
			PerUserLimit: max(it.PerUserLimit, 1), Queued: true}
		if _, err := c.Catalog.Define(ctx, def); err != nil {
			return out, campaignAnswer("define "+child, err)
		}
		if _, err := c.Catalog.Preheat(ctx, it.SKU); err != nil {
			return out, campaignAnswer("preheat "+it.SKU, err)
		}
		out.SKUs = append(out.SKUs, child)
	}
	return out, nil
}

// ControlCampaign sends the action to every item's sale; a sale whose
// state does not allow it (already there, or ended) is skipped.
func (c CampaignSteps) ControlCampaign(ctx context.Context, in contract.ControlCampaignInput) (contract.ControlledCampaign, error) {
	var out contract.ControlledCampaign
	for _, sku := range in.SKUs {
		_, err := c.Sales.Control(ctx, sku, in.Action, in.Reason)
		switch flashsale.ErrorCode(err) {
		case "":
			out.Applied++
		case flashsale.SaleStateConflict, flashsale.SaleClosed, flashsale.NoSale:
		default:
			return out, fmt.Errorf("%s the sale of %s: %w", in.Action, sku, err)
		}
	}
	return out, nil
}

// ReturnCampaignStock gives each item's units left (Left) back to its
// SKU: carved out of the ended campaign SKU, then restocked into the SKU
// (MySQL, and Redis when it is on sale), each once per item.
func (c CampaignSteps) ReturnCampaignStock(ctx context.Context, in contract.ReturnCampaignInput) (contract.ReturnedCampaignStock, error) {
	out := contract.ReturnedCampaignStock{Returned: make([]int64, len(in.Items))}
	for i, it := range in.Items {
		left := in.Left[i]
		if left <= 0 {
			continue
		}
		child := contract.CampaignSKU(in.ID, it.SKU)
		if _, _, err := c.Catalog.DB.Carve(ctx, child, left, returnRef(child)); err != nil {
			return out, campaignAnswer("take back "+child, err)
		}
		if _, err := c.Catalog.Restock(ctx, it.SKU, returnRef(child), left); err != nil {
			return out, campaignAnswer("return to "+it.SKU, err)
		}
		out.Returned[i] = left
	}
	return out, nil
}

// campaignAnswer makes a business answer non-retryable; an outage and a
// SKU still in use are retried.
func campaignAnswer(op string, err error) error {
	code := flashsale.ErrorCode(err)
	switch code {
	case flashsale.UnknownSKU, flashsale.Invalid, flashsale.StockDrift:
		return temporal.NewNonRetryableApplicationError(fmt.Sprintf("%s: %v", op, err), contract.TypeFor(code), err)
	}
	return fmt.Errorf("%s: %w", op, err)
}
