package catalog

import (
	"context"
	"fmt"

	"github.com/flashsale/flashsale"
)

// Stock is a SKU's stock in Redis (what buyers are sold from) beside MySQL
// (the truth), so drift shows at a glance. The CLI's stock command and GET
// /api/v1/inventory/{sku} both show it.
type Stock struct {
	Units
	// SoldOut: a buy now would be refused SOLD_OUT (inventory's
	// Stock.Exhausted), or the SKU was never preheated.
	SoldOut bool `json:"sold_out"`
	// BucketCount is Redis's bucket count, or MySQL's for a SKU never
	// preheated (the count its preheat will use).
	BucketCount int `json:"bucket_count"`
	// Drift counts units Redis let through that MySQL refused.
	Drift int64 `json:"drift"`
	// OnSale is false while the SKU was never preheated.
	OnSale bool `json:"on_sale"`
	// BookingsLeft is what buyers can still book of a SKU that deducts at
	// payment (flashsale.DeductPayment): its units leave Redis only when
	// paid, so Available says nothing of how many more may buy. Nil for a
	// SKU that deducts at the order.
	BookingsLeft *int64 `json:"bookings_left,omitempty"`
}

// Units is a SKU's counts, Redis's on sale beside MySQL's: the head of
// Stock, and of GET /api/v1/inventory/{sku}'s answer, which shows them as
// they are.
type Units struct {
	SKU   string `json:"sku_id"`
	Total int64  `json:"total"`
	// Available is Redis's units on sale (0 for a SKU never preheated).
	Available   int64 `json:"available"`
	DBAvailable int64 `json:"db_available"`
	Frozen      int64 `json:"frozen"`
	Sold        int64 `json:"sold"`
}

// Stock reads sku's stock view. A SKU MySQL does not know is UnknownSKU.
func (c Catalog) Stock(ctx context.Context, sku string) (Stock, error) {
	if err := flashsale.CheckID("sku id", sku, flashsale.MaxIDLength); err != nil {
		return Stock{}, err
	}
	inv, err := c.DB.Inventory(ctx, sku)
	if err != nil {
		return Stock{}, fmt.Errorf("stock of %s in mysql: %w", sku, err)
	}
	out := Stock{Units: Units{SKU: inv.SKU, Total: inv.Total, DBAvailable: inv.Available, Frozen: inv.Frozen, Sold: inv.Sold},
		BucketCount: inv.Buckets, SoldOut: true}
	st, err := c.Redis.Stock(ctx, sku)
	switch {
	case flashsale.ErrorCode(err) == flashsale.UnknownSKU:
		// Defined in MySQL but never preheated: nothing is on sale.
		return out, nil
	case err != nil:
		return Stock{}, fmt.Errorf("stock of %s in redis: %w", sku, err)
	}
	out.OnSale = true
	out.Available, out.BucketCount, out.Drift, out.BookingsLeft = st.Available, st.Buckets, st.Drift, st.BookingsLeft
	out.SoldOut = st.Exhausted()
	return out, nil
}
