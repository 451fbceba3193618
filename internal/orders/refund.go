package orders

import (
	"context"
	"fmt"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/internal/inventory"
	"github.com/flashsale/flashsale/internal/orderdb"
)

// Refunds is the operator's refund of one paid order and the record of
// money sent back (the admin API and `starter refund` call it).
type Refunds struct {
	Orders *orderdb.Store
	Stock  *inventory.Store
}

// Refunded answers a refund: the first refund's result, whoever asks.
type Refunded struct {
	orderdb.RefundResult
	// OnSale: the restocked units are back in Redis, on sale. False when
	// written off, or when the SKU is not on sale (its sale ended, or
	// Redis lost it): MySQL's available holds them for the next preheat.
	OnSale bool `json:"on_sale"`
}

// Refund refunds a PAID order exactly once (orderdb.Store.RefundPaidOrder:
// the order CANCELLED, its money REFUND_REQUIRED, a REFUND journal entry),
// after its sale ended too, and gives restocked units back to Redis while
// the SKU is on sale. A repeat, concurrent or later, answers the first
// result and finishes its Redis half (each order's units go back once,
// release.lua), so a crash between the two halves is healed by a retry.
func (r Refunds) Refund(ctx context.Context, orderID, reason string, restock bool) (Refunded, error) {
	if reason == "" {
		reason = "refunded by an operator"
	}
	res, err := r.Orders.RefundPaidOrder(ctx, orderID, reason, restock)
	if err != nil {
		return Refunded{}, err
	}
	out := Refunded{RefundResult: res}
	if !res.Restocked || res.Order.Degraded {
		// A degraded order's units are re-synced from MySQL instead.
		return out, nil
	}
	out.OnSale = true
	for _, it := range res.Order.Items {
		inv, err := r.Orders.Inventory(ctx, it.SKU)
		if err != nil {
			return out, err
		}
		if inv.SaleEndedAt != nil {
			out.OnSale = false
			continue
		}
		_, held, err := r.Stock.ReleaseHeld(ctx, orderID, it.SKU)
		if err == nil && !held {
			// The order's markers expired (a sale day after the take):
			// the units go back as a restock, once by its request id.
			_, err = r.Stock.Restock(ctx, it.SKU, "refund-"+orderID, it.Quantity)
		}
		if flashsale.ErrorCode(err) == flashsale.UnknownSKU {
			// Redis lost the SKU: its restore counts MySQL's available.
			out.OnSale = false
			continue
		}
		if err != nil {
			return out, fmt.Errorf("give back the units of refunded order %s: %w", orderID, err)
		}
	}
	return out, nil
}

// MarkRefunded records that money owed back has been sent back
// (orderdb.Store.MarkRefunded).
func (r Refunds) MarkRefunded(ctx context.Context, txnID, ref string) (orderdb.Payment, error) {
	return r.Orders.MarkRefunded(ctx, txnID, ref)
}
