package catalog

import (
	"context"
	"fmt"

	"github.com/flashsale/flashsale"
)

// Resized is what Resize did.
type Resized struct {
	SKU     string `json:"sku_id"`
	Buckets int    `json:"buckets"`
	// RedisAvailable is the sum of the live buckets after the resize (0 for a
	// SKU never preheated).
	RedisAvailable int64 `json:"redis_available"`
}

// Resize changes a SKU's Redis bucket count while its sale runs
// (inventory.Store.Resize moves units between buckets, never out of Redis),
// then records the count in MySQL so a later preheat or restore uses it.
// Redis goes first: the MySQL column only matters to those later reloads,
// and a retry after a failure in between is safe (Resize is idempotent). A
// SKU MySQL knows but Redis does not (never preheated) only gets the new
// count in MySQL, for its preheat, and RedisAvailable 0.
//
// Error codes: Invalid (a count out of 1..MaxBuckets), UnknownSKU (MySQL
// does not know the SKU), ResizeBusy (another resize of the SKU runs).
func (c Catalog) Resize(ctx context.Context, sku string, buckets int) (Resized, error) {
	if err := flashsale.CheckID("sku id", sku, flashsale.MaxIDLength); err != nil {
		return Resized{}, err
	}
	if err := flashsale.CheckBuckets(buckets); err != nil {
		return Resized{}, err
	}
	// MySQL first as a read: an unknown SKU must not get Redis keys.
	if _, err := c.DB.Inventory(ctx, sku); err != nil {
		return Resized{}, fmt.Errorf("resize %s: %w", sku, err)
	}
	res, err := c.Redis.Resize(ctx, sku, buckets)
	if err != nil && flashsale.ErrorCode(err) != flashsale.UnknownSKU {
		return Resized{}, fmt.Errorf("resize %s in redis: %w", sku, err)
	}
	if _, err := c.DB.SetBuckets(ctx, sku, buckets); err != nil {
		return Resized{}, fmt.Errorf("record %d buckets of %s in mysql: %w", buckets, sku, err)
	}
	// MySQL's bucket rows follow, so a create still takes the row of the
	// bucket Redis starts at (orderdb.Store.SplitStock).
	if _, err := c.DB.SplitStock(ctx, sku, buckets); err != nil {
		return Resized{}, fmt.Errorf("split %s into %d bucket rows in mysql: %w", sku, buckets, err)
	}
	return Resized{SKU: sku, Buckets: buckets, RedisAvailable: res.RedisAvailable}, nil
}
