// Package catalog holds the use cases of operating a SKU, shared by the
// operators' CLI and the admin API (their handlers decode, call and
// encode): define a SKU in MySQL and preheat its Redis buckets from it
// (both refused while a sale of the SKU is still running), restock it
// mid-sale, resize its buckets mid-sale, and read its stock.
//
// Preheat overwrites the buckets with MySQL's available units. While orders
// are in flight (a Redis take whose MySQL order is not written yet, a
// release not yet back in Redis) that count is wrong by their units, and
// Redis would offer units MySQL then refuses, or hide units it has. A live
// sale is repaired by reconciliation (starter reconcile now), which counts
// the orders in flight; these functions are for before a sale.
package catalog

import (
	"context"
	"errors"
	"fmt"

	"go.temporal.io/sdk/client"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/internal/inventory"
	"github.com/flashsale/flashsale/internal/orderdb"
	"github.com/flashsale/flashsale/internal/orders"
	"github.com/flashsale/flashsale/workflows"
)

// Catalog holds what operating a SKU touches.
type Catalog struct {
	// DB is MySQL, the truth of a SKU's stock.
	DB *orderdb.Store
	// Redis holds the buckets buyers are sold from.
	Redis *inventory.Store
	// Temporal answers whether order workflows or the sale of the SKU
	// still run (orders.Running).
	Temporal client.Client
}

// errSKUInUse is ensureIdle's refusal; the wrapping says what runs.
var errSKUInUse = flashsale.Errorf(flashsale.SKUInUse, "a sale of this sku is still running")

// Defined is a SKU as defined and preheated.
type Defined struct {
	Inventory orderdb.Inventory       `json:"inventory"`
	Preheat   inventory.PreheatResult `json:"preheat"`
}

// Define creates or resets a SKU in MySQL (orderdb.Store.PutSKU) and
// preheats Redis from it in the same step, so Redis never keeps selling a
// previous sale's buckets. It refuses with a SKUInUse error while a sale
// of the SKU runs (see ensureIdle).
func (c Catalog) Define(ctx context.Context, sku flashsale.SKU) (Defined, error) {
	// A SKU MySQL does not know yet is idle.
	if err := sku.Validate(); err != nil {
		return Defined{}, err
	}
	if _, err := c.ensureIdle(ctx, sku.ID); err != nil && flashsale.ErrorCode(err) != flashsale.UnknownSKU {
		return Defined{}, err
	}
	inv, err := c.DB.PutSKU(ctx, sku)
	if err != nil {
		return Defined{}, err
	}
	return c.preheat(ctx, inv)
}

// Preheat reloads a SKU's Redis buckets from MySQL's available units, with
// the same guard as Define.
func (c Catalog) Preheat(ctx context.Context, sku string) (Defined, error) {
	inv, err := c.ensureIdle(ctx, sku)
	if err != nil {
		return Defined{}, err
	}
	return c.preheat(ctx, inv)
}

func (c Catalog) preheat(ctx context.Context, inv orderdb.Inventory) (Defined, error) {
	// The SKU goes on sale again: a sale that ended is over, and what its
	// end still removes from Redis (nothing, unless it was cut short) must
	// not be this sale's keys (activities.RemoveSaleKeys checks the mark).
	if err := c.DB.ReopenSale(ctx, inv.SKU); err != nil {
		return Defined{}, err
	}
	// The per-buyer limit goes to Redis with the sale it belongs to, before
	// the buckets, so the edge and Reserve refuse a buyer over it before
	// any unit is taken; a new sale (a PUT moved sale_started_at) starts
	// every buyer's count from zero, as MySQL's check does.
	started, err := c.DB.SaleStartedAt(ctx, inv.SKU)
	if err != nil {
		return Defined{}, err
	}
	if err := c.Redis.SetLimit(ctx, inv.SKU, inv.PerUserLimit, max(started.UnixMilli(), 0)); err != nil {
		return Defined{}, err
	}
	// A SKU for a fair sale refuses every buy until its sale is created,
	// so its units are not sold before its queue exists.
	if err := c.Redis.SetQueued(ctx, inv.SKU, inv.Queued); err != nil {
		return Defined{}, err
	}
	// A SKU that deducts at payment takes bookings, its stock times its
	// overbooking factor, so its open orders stay bounded; any other has
	// none (inventory/booking.go).
	var bookings int64
	if inv.Deduct == flashsale.DeductPayment {
		bookings = inv.Available * int64(inv.OverbookOf())
	}
	if err := c.Redis.SetBookings(ctx, inv.SKU, bookings); err != nil {
		return Defined{}, err
	}
	// MySQL's stock goes onto bucket rows that mirror the Redis buckets
	// (a create takes the row of the bucket Redis starts at), so orders of
	// the SKU do not queue on one row lock (orderdb.Store.SplitStock). A
	// SKU that deducts at payment keeps its row: only payments take from
	// it, far fewer than buys.
	if bookings == 0 {
		if _, err := c.DB.SplitStock(ctx, inv.SKU, inv.Buckets); err != nil {
			return Defined{}, err
		}
	}
	pre, err := c.Redis.Preheat(ctx, inv.SKU, inv.Available, inv.Buckets)
	if err != nil {
		return Defined{}, err
	}
	return Defined{Inventory: inv, Preheat: pre}, nil
}

// ensureIdle returns the SKU's inventory, or refuses with a SKUInUse
// error while anything of the SKU still runs (orders.Running says what
// counts). A SKU MySQL does not know gives the UnknownSKU error of
// Store.Inventory, without asking Temporal.
func (c Catalog) ensureIdle(ctx context.Context, sku string) (orderdb.Inventory, error) {
	inv, err := c.DB.Inventory(ctx, sku)
	if err != nil {
		return inv, err
	}
	if c.Temporal == nil {
		return inv, errors.New("catalog has no Temporal client to ask for running orders")
	}
	run, err := (&orders.Service{Temporal: c.Temporal, Orders: c.DB}).Running(ctx, sku)
	switch {
	case err != nil:
		return inv, fmt.Errorf("sku %s: %w", sku, err)
	case run.Frozen > 0:
		return inv, fmt.Errorf("sku %s: %d units reserved by unpaid orders (a live sale is repaired with reconcile): %w",
			sku, run.Frozen, errSKUInUse)
	case run.Orders > 0:
		return inv, fmt.Errorf("sku %s: %d order workflows still running (a live sale is repaired with reconcile): %w",
			sku, run.Orders, errSKUInUse)
	case run.Sale:
		// A fair sale's workflow runs until its end has removed its Redis
		// keys; a preheat meanwhile would write keys it then removes.
		return inv, fmt.Errorf("sku %s: its fair sale (workflow %s) runs: close it and let it end first: %w",
			sku, workflows.SaleWorkflowID(sku), errSKUInUse)
	}
	return inv, nil
}
