package activities

import (
	"context"
	"fmt"

	"github.com/flashsale/flashsale"
)

// RestoreStockInput names a SKU whose buckets Redis lost.
type RestoreStockInput struct {
	SKU string `json:"sku_id"`
}

// RestoreStockResult reports the restore.
type RestoreStockResult struct {
	// Restored is false when the SKU was already back in Redis (another
	// run, or a retry of this one, restored it).
	Restored    bool  `json:"restored"`
	Buckets     int   `json:"buckets"`
	RedisUnits  int64 `json:"redis_units"`
	DBAvailable int64 `json:"db_available"`
}

// RestoreStock re-preheats a SKU whose bucket count Redis lost, from MySQL's
// available units and bucket count (inventory.Store.Restore: write-if-absent,
// count last). Units of orders that had taken from Redis but not yet reached
// MySQL when Redis lost them are counted as available here; MySQL still
// refuses them if they run out, and the next reconcile run sees the drift
// and removes them.
func (r *Reconciler) RestoreStock(ctx context.Context, in RestoreStockInput) (RestoreStockResult, error) {
	inv, err := r.Orders.Inventory(ctx, in.SKU)
	if flashsale.ErrorCode(err) == flashsale.UnknownSKU {
		return RestoreStockResult{}, refuse("restore "+in.SKU, err)
	}
	if err != nil {
		return RestoreStockResult{}, fmt.Errorf("restore %s: %w", in.SKU, err)
	}
	res, err := r.Stock.Restore(ctx, in.SKU, inv.Available, inv.Buckets)
	if err != nil {
		return RestoreStockResult{}, classifyStockErr("restore "+in.SKU, err)
	}
	if res.Restored {
		r.logger(ctx).Warn("restored lost redis stock from mysql",
			"sku_id", in.SKU, "db_available", inv.Available, "buckets", res.Buckets, "redis_units", res.Units)
	}
	return RestoreStockResult{Restored: res.Restored, Buckets: res.Buckets, RedisUnits: res.Units, DBAvailable: inv.Available}, nil
}

// CorrectStockInput is a drift seen identically by two observations.
type CorrectStockInput struct {
	SKU string `json:"sku_id"`
	// Delta is the drift: units to add (positive) or remove (negative).
	Delta int64 `json:"delta"`
	// Fence is the reconcile fence both observations read.
	Fence int64 `json:"fence"`
	// CorrectionID makes the correction idempotent; unique per run and SKU.
	CorrectionID string `json:"correction_id"`
}

// CorrectStockResult reports the correction.
type CorrectStockResult struct {
	// Claimed is false when another correction or a restore moved the
	// fence first; nothing was changed then.
	Claimed bool `json:"claimed"`
	// Applied is what moved: Delta, or less when removing units that
	// buyers took meanwhile.
	Applied int64 `json:"applied"`
}

// CorrectStock claims the observation's fence and moves the buckets by
// Delta, relatively (see Reconciler, rules 1 and 5). Retries are safe: the
// claim and each bucket's move are recorded under CorrectionID.
func (r *Reconciler) CorrectStock(ctx context.Context, in CorrectStockInput) (CorrectStockResult, error) {
	if in.Delta == 0 || in.CorrectionID == "" {
		return CorrectStockResult{}, refuse("correct "+in.SKU,
			flashsale.Errorf(flashsale.Invalid, "need a non-zero delta and a correction id"))
	}
	claimed, err := r.Stock.ClaimCorrection(ctx, in.SKU, in.Fence, in.CorrectionID)
	if err != nil {
		return CorrectStockResult{}, classifyStockErr("correct "+in.SKU, err)
	}
	if !claimed {
		return CorrectStockResult{}, nil
	}
	applied, err := r.Stock.Adjust(ctx, in.SKU, in.Delta, in.CorrectionID)
	if err != nil {
		return CorrectStockResult{}, classifyStockErr("correct "+in.SKU, err)
	}
	r.logger(ctx).Warn("corrected redis stock drift",
		"sku_id", in.SKU, "drift", in.Delta, "applied", applied, "correction_id", in.CorrectionID)
	return CorrectStockResult{Claimed: true, Applied: applied}, nil
}
