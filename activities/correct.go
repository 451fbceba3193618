package activities

import (
	"context"
	"fmt"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/activities/contract"
)

// RestoreStock re-preheats a SKU whose bucket count Redis lost, from MySQL's
// available units and bucket count (inventory.Store.Restore: write-if-absent,
// count last). Units of orders that had taken from Redis but not yet reached
// MySQL when Redis lost them are counted as available here; MySQL still
// refuses them if they run out, and the next reconcile run sees the drift
// and removes them.
func (r *Reconciler) RestoreStock(ctx context.Context, in contract.RestoreStockInput) (contract.RestoreStockResult, error) {
	inv, err := r.Orders.Inventory(ctx, in.SKU)
	if flashsale.ErrorCode(err) == flashsale.UnknownSKU {
		return contract.RestoreStockResult{}, refuse("restore "+in.SKU, err)
	}
	if err != nil {
		return contract.RestoreStockResult{}, fmt.Errorf("restore %s: %w", in.SKU, err)
	}
	res, err := r.Stock.Restore(ctx, in.SKU, inv.Available, inv.Buckets)
	if err != nil {
		return contract.RestoreStockResult{}, classifyStockErr("restore "+in.SKU, err)
	}
	if res.Restored {
		r.logger(ctx).Warn("restored lost redis stock from mysql",
			"sku_id", in.SKU, "db_available", inv.Available, "buckets", res.Buckets, "redis_units", res.Units)
	}
	return contract.RestoreStockResult{Restored: res.Restored, Buckets: res.Buckets, RedisUnits: res.Units, DBAvailable: inv.Available}, nil
}

// CorrectStock claims the observation's fence and moves the buckets by
// Delta, relatively (see Reconciler, rules 1 and 5). Retries are safe: the
// claim and each bucket's move are recorded under CorrectionID.
func (r *Reconciler) CorrectStock(ctx context.Context, in contract.CorrectStockInput) (contract.CorrectStockResult, error) {
	if in.Delta == 0 || in.CorrectionID == "" {
		return contract.CorrectStockResult{}, refuse("correct "+in.SKU,
			flashsale.Errorf(flashsale.Invalid, "need a non-zero delta and a correction id"))
	}
	claimed, err := r.Stock.ClaimCorrection(ctx, in.SKU, in.Fence, in.CorrectionID)
	if err != nil {
		return contract.CorrectStockResult{}, classifyStockErr("correct "+in.SKU, err)
	}
	if !claimed {
		return contract.CorrectStockResult{}, nil
	}
	applied, err := r.Stock.Adjust(ctx, in.SKU, in.Delta, in.CorrectionID)
	if err != nil {
		return contract.CorrectStockResult{}, classifyStockErr("correct "+in.SKU, err)
	}
	r.logger(ctx).Warn("corrected redis stock drift",
		"sku_id", in.SKU, "drift", in.Delta, "applied", applied, "correction_id", in.CorrectionID)
	return contract.CorrectStockResult{Claimed: true, Applied: applied}, nil
}
