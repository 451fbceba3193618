package activities

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/activities/contract"
	"github.com/flashsale/flashsale/internal/orderdb"
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
	if in.HoldID != 0 {
		if err := r.Orders.MarkHoldApplied(ctx, in.HoldID); err != nil {
			return contract.CorrectStockResult{}, err
		}
	}
	r.logger(ctx).Warn("corrected redis stock drift",
		"sku_id", in.SKU, "drift", in.Delta, "applied", applied, "correction_id", in.CorrectionID)
	return contract.CorrectStockResult{Claimed: true, Applied: applied}, nil
}

// HoldDrift records a confirmed drift larger than the run may correct by
// itself (orderdb.Store.HoldDrift), with a report of the run's two
// observations and the SKU's journal entries of the last hour, and answers
// the hold's status: APPROVED lets the run correct it.
func (r *Reconciler) HoldDrift(ctx context.Context, in contract.HoldDriftInput) (contract.HoldDriftResult, error) {
	journal, err := r.Orders.JournalSince(ctx, in.SKU, time.Now().Add(-time.Hour), holdReportEntries)
	if err != nil {
		return contract.HoldDriftResult{}, err
	}
	report, err := json.MarshalIndent(map[string]any{
		"run_id": in.RunID, "sku_id": in.SKU, "drift": in.First.Drift, "limit": in.Limit,
		"first": in.First, "second": in.Second, "journal_last_hour": journal,
	}, "", "  ")
	if err != nil {
		return contract.HoldDriftResult{}, fmt.Errorf("hold drift of %s: %w", in.SKU, err)
	}
	h, err := r.Orders.HoldDrift(ctx, in.SKU, in.First.Drift, in.First.Fence, string(report))
	if err != nil {
		return contract.HoldDriftResult{}, err
	}
	if h.Status == orderdb.HoldPending {
		r.logger(ctx).Error("drift held for a person: larger than reconciliation corrects by itself",
			"sku_id", in.SKU, "drift", in.First.Drift, "limit", in.Limit, "hold_id", h.ID)
	}
	return contract.HoldDriftResult{HoldID: h.ID, Status: h.Status}, nil
}

// holdReportEntries bounds the journal entries a hold's report carries.
const holdReportEntries = 500
