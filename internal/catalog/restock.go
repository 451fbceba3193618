package catalog

import (
	"context"
	"fmt"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/internal/orderdb"
)

// Restocked is what Restock did.
type Restocked struct {
	SKU       string `json:"sku_id"`
	RestockID string `json:"restock_id"`
	Quantity  int64  `json:"quantity"`
	// Added is false when this restock id had been applied before.
	Added bool `json:"added"`
	// Inventory is MySQL's row after the restock.
	Inventory orderdb.Inventory `json:"inventory"`
	// OnSale is false when the SKU was never preheated: the units are in
	// the database and the next preheat puts them on sale.
	OnSale bool `json:"on_sale"`
}

// Restock adds qty units to a SKU mid-sale, idempotent by restockID: MySQL
// first (the truth, journaled), then Redis, whose bump clears the sold-out
// flag and publishes the change, so every API instance drops its sold-out
// cache. Redis is asked even when MySQL says "already applied", in case the
// first attempt died between the two; Redis remembers the restock id for a
// day, and a repeat after that would only make Redis offer units MySQL then
// refuses (recorded as drift), never an oversale.
//
// A request id reused with another quantity is an Invalid error; a SKU
// MySQL does not know is UnknownSKU.
func (c Catalog) Restock(ctx context.Context, sku, restockID string, qty int64) (Restocked, error) {
	if err := CheckRestock(sku, restockID, qty); err != nil {
		return Restocked{}, err
	}
	res, err := c.DB.Restock(ctx, sku, qty, restockID)
	if flashsale.ErrorCode(err) == flashsale.Invalid {
		// The input was checked above; what is left is the idempotency key
		// reused for a different quantity.
		return Restocked{}, fmt.Errorf("restock %s: %w: %w", sku,
			flashsale.Errorf(flashsale.Invalid, "restock_id was already used with a different quantity"), err)
	}
	if err != nil {
		return Restocked{}, fmt.Errorf("restock %s in mysql: %w", sku, err)
	}
	// The new units land on the SKU's row; spread them over its bucket
	// rows before Redis offers them. A repeat finds nothing left to spread.
	if _, err := c.DB.SplitStock(ctx, sku, res.Inventory.Buckets); err != nil {
		return Restocked{}, fmt.Errorf("restock %s in mysql: %w", sku, err)
	}
	out := Restocked{SKU: sku, RestockID: restockID, Quantity: qty, Added: res.Added, Inventory: res.Inventory, OnSale: true}
	if _, err := c.Redis.Restock(ctx, sku, restockID, qty); err != nil {
		if flashsale.ErrorCode(err) != flashsale.UnknownSKU {
			return Restocked{}, fmt.Errorf("restock %s in redis: %w", sku, err)
		}
		out.OnSale = false
	}
	return out, nil
}

// CheckRestock is Restock's check of its input, as Invalid errors.
func CheckRestock(sku, restockID string, qty int64) error {
	if err := flashsale.CheckID("sku id", sku, flashsale.MaxIDLength); err != nil {
		return err
	}
	if qty < 1 || qty > flashsale.MaxSKUTotal {
		return flashsale.Errorf(flashsale.Invalid, "quantity must be 1-%d", flashsale.MaxSKUTotal)
	}
	return flashsale.CheckID("restock_id", restockID, flashsale.MaxIDLength)
}
