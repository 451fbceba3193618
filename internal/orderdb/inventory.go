package orderdb

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/flashsale/flashsale"

	"gorm.io/gorm"
)

// validateSKU is the store's check of a definition: the id and bucket count
// as everywhere, amounts only as far as the columns need. flashsale.SKU's
// Validate bounds amounts further for input from outside; the store keeps
// accepting what its columns hold, so its overflow guards stay reachable.
func validateSKU(k flashsale.SKU) error {
	if err := flashsale.CheckID("sku_id", k.ID, flashsale.MaxIDLength); err != nil {
		return err
	}
	switch {
	case k.Total < 0:
		return invalidf("total %d is negative", k.Total)
	case k.Price < 0:
		return invalidf("price %d is negative", k.Price)
	case k.PerUserLimit < 1:
		return invalidf("per-user limit %d is below 1", k.PerUserLimit)
	}
	return flashsale.CheckBuckets(k.Buckets)
}

// PutSKU creates a SKU, or resets an existing one before a sale: available =
// total, frozen = sold = 0, with the new price, bucket count and per-user
// limit. Sold units are forgotten by the row but stay in the journal.
//
// It refuses with SKUInUse while unpaid orders hold units (frozen > 0):
// zeroing frozen would let a later payment or expiry of those orders move
// units that no longer exist, breaking the stock invariants.
func (s *Store) PutSKU(ctx context.Context, sku flashsale.SKU) (Inventory, error) {
	if err := validateSKU(sku); err != nil {
		return Inventory{}, fmt.Errorf("put sku %s: %w", sku.ID, err)
	}
	ts := now()
	// Nanoseconds, not the millisecond timestamp, so two resets in the same
	// millisecond still get distinct journal keys.
	ref := fmt.Sprintf("reset-%d", time.Now().UnixNano())

	var out inventoryRow
	err := s.writeTx(ctx, isDuplicateKey, func(tx *gorm.DB) error {
		cur, err := lockInventory(tx, sku.ID)
		exists := err == nil
		if err != nil && flashsale.ErrorCode(err) != flashsale.UnknownSKU {
			return err
		}
		// Bucket rows (SplitStock) are part of the SKU: locked after its
		// row, and emptied and removed with the old sale.
		var rows []bucketRow
		if exists && cur.BucketRows > 0 {
			if err := tx.Clauses(forUpdate).Where("sku_id = ?", sku.ID).Order("bucket").Find(&rows).Error; err != nil {
				return err
			}
		}
		frozen := cur.Frozen
		for _, r := range rows {
			frozen += r.Frozen
		}
		if exists && frozen > 0 {
			return fmt.Errorf("%d units reserved by unpaid orders: %w", frozen, flashsale.Errorf(flashsale.SKUInUse, "sku has unpaid reservations"))
		}
		if err := resetBuckets(tx, rows, ref, ts); err != nil {
			return err
		}

		out = inventoryRow{
			SKUID:                  sku.ID,
			Total:                  sku.Total,
			Available:              sku.Total,
			Price:                  sku.Price,
			BucketCount:            sku.Buckets,
			PerUserLimit:           sku.PerUserLimit,
			Queued:                 sku.Queued,
			SaleStartedAt:          ts,
			PaymentWindowMs:        sku.PaymentWindow.D().Milliseconds(),
			LatePayment:            string(cmp.Or(sku.LatePayment, flashsale.LateRefund)),
			ReleaseOnFailedPayment: sku.ReleaseOnFailedPayment,
			Deduct:                 string(cmp.Or(sku.Deduct, flashsale.DeductHold)),
			Overbook:               sku.Overbook,
			CreatedAt:              ts,
			UpdatedAt:              ts,
		}
		if exists {
			out.CreatedAt = cur.CreatedAt
			err = tx.Model(&inventoryRow{}).Where("sku_id = ?", sku.ID).UpdateColumns(map[string]any{
				"total":                     out.Total,
				"available":                 out.Available,
				"frozen":                    0,
				"sold":                      0,
				"price":                     out.Price,
				"bucket_count":              out.BucketCount,
				"per_user_limit":            out.PerUserLimit,
				"sale_started_at":           ts,
				"bucket_rows":               0,
				"sale_ended_at":             nil,
				"queued":                    out.Queued,
				"payment_window_ms":         out.PaymentWindowMs,
				"late_payment":              out.LatePayment,
				"release_on_failed_payment": out.ReleaseOnFailedPayment,
				"deduct":                    out.Deduct,
				"overbook":                  out.Overbook,
				"updated_at":                ts,
			}).Error
		} else {
			// A concurrent PutSKU may insert the same id first: the duplicate
			// key error makes writeTx rerun us, and we then take the update
			// path on the row it created.
			err = tx.Create(&out).Error
		}
		if err != nil {
			return err
		}
		// Deltas are relative to the previous row (zero for a new SKU) so
		// summing the journal of a SKU always replays its current row.
		j := journalFor(out, ref, journalReset,
			out.Available-cur.Available, -cur.Frozen, -cur.Sold,
			fmt.Sprintf("reset: total=%d price=%d buckets=%d limit=%d", sku.Total, sku.Price, sku.Buckets, sku.PerUserLimit), ts)
		return tx.Create(&j).Error
	})
	if err != nil {
		return Inventory{}, fmt.Errorf("put sku %s: %w", sku.ID, err)
	}
	return out.toInventory(), nil
}

// Inventory returns the current stock row of a SKU, or UnknownSKU.
func (s *Store) Inventory(ctx context.Context, skuID string) (Inventory, error) {
	row, err := takeStock(s.db.WithContext(ctx), skuID)
	if err != nil {
		return Inventory{}, fmt.Errorf("inventory %s: %w", skuID, err)
	}
	return row.toInventory(), nil
}

// MarkQueued records that sku is sold through a fair sale (a sale of it
// starts): from then on a buy of it is refused while Redis, which holds
// the passes, does not answer, by any API instance, a new one included.
// UnknownSKU for a SKU not defined. A PUT of the SKU says again whether
// it is queued.
func (s *Store) MarkQueued(ctx context.Context, skuID string) error {
	res := s.db.WithContext(ctx).Model(&inventoryRow{}).Where("sku_id = ?", skuID).UpdateColumn("queued", true)
	switch {
	case res.Error != nil:
		return fmt.Errorf("mark %s queued: %w", skuID, classify(res.Error, nil))
	case res.RowsAffected == 0:
		if _, err := s.Inventory(ctx, skuID); err != nil {
			return fmt.Errorf("mark %s queued: %w", skuID, err)
		}
	}
	return nil
}

// Queued reports whether sku is sold through a fair sale only
// (MarkQueued, or its PUT); UnknownSKU for a SKU not defined.
func (s *Store) Queued(ctx context.Context, skuID string) (bool, error) {
	row, err := takeInventory(s.db.WithContext(ctx), skuID)
	if err != nil {
		return false, fmt.Errorf("queued %s: %w", skuID, err)
	}
	return row.Queued, nil
}

// SaleStartedAt is when the SKU's current sale started (its last PutSKU):
// the per-user limit counts the orders created since. Redis keeps a copy
// of the limit under this sale (inventory.Store.SetLimit), or UnknownSKU.
func (s *Store) SaleStartedAt(ctx context.Context, skuID string) (time.Time, error) {
	row, err := takeInventory(s.db.WithContext(ctx), skuID)
	if err != nil {
		return time.Time{}, fmt.Errorf("sale of %s: %w", skuID, err)
	}
	return row.SaleStartedAt, nil
}

// Restock adds qty units to a SKU during a sale (total and available go up
// together) and journals a RESTOCK entry under requestID. It is idempotent
// by requestID: the journal's unique (ref_id, sku_id, type) key records that
// the request ran, so a repeat returns the current row with Added=false and
// moves nothing. A repeat with a different quantity is refused, because the
// caller evidently means a different request.
//
// Call it before adding the units to Redis (inventory.Store.Restock): Redis
// must never offer units the database does not have yet.
func (s *Store) Restock(ctx context.Context, skuID string, qty int64, requestID string) (RestockResult, error) {
	if err := flashsale.CheckID("sku_id", skuID, flashsale.MaxIDLength); err != nil {
		return RestockResult{}, fmt.Errorf("restock %s: %w", skuID, err)
	}
	if err := flashsale.CheckID("restock_id", requestID, flashsale.MaxIDLength); err != nil {
		return RestockResult{}, fmt.Errorf("restock %s: %w", skuID, err)
	}
	if qty <= 0 {
		return RestockResult{}, fmt.Errorf("restock %s: %w", skuID, invalidf("quantity %d is not positive", qty))
	}

	var out RestockResult
	// A duplicate key on the journal insert means a concurrent call with the
	// same request id committed first; the rerun finds its entry.
	err := s.writeTx(ctx, isDuplicateKey, func(tx *gorm.DB) error {
		inv, err := lockInventory(tx, skuID)
		if err != nil {
			return err
		}
		var prior journalRow
		err = tx.Where("ref_id = ? AND sku_id = ? AND type = ?", requestID, skuID, journalRestock).Take(&prior).Error
		switch {
		case err == nil:
			if prior.DeltaAvailable != qty {
				return invalidf("request %s already added %d units, not %d", requestID, prior.DeltaAvailable, qty)
			}
			stock, err := takeStock(tx, skuID)
			if err != nil {
				return err
			}
			out = RestockResult{Inventory: stock.toInventory()}
			return nil
		case !errors.Is(err, gorm.ErrRecordNotFound):
			return err
		}
		if inv.Total > math.MaxInt64-qty {
			return invalidf("total %d + %d overflows", inv.Total, qty)
		}

		ts := now()
		err = tx.Model(&inventoryRow{}).Where("sku_id = ?", skuID).UpdateColumns(map[string]any{
			"total":      gorm.Expr("total + ?", qty),
			"available":  gorm.Expr("available + ?", qty),
			"updated_at": ts,
		}).Error
		if err != nil {
			return err
		}
		inv.Total += qty
		inv.Available += qty
		inv.UpdatedAt = ts
		j := journalFor(inv, requestID, journalRestock, qty, 0, 0, fmt.Sprintf("restock +%d", qty), ts)
		if err := tx.Create(&j).Error; err != nil {
			return err
		}
		// The SKU's truth, with its bucket rows: inv is its row alone.
		stock, err := takeStock(tx, skuID)
		if err != nil {
			return err
		}
		out = RestockResult{Inventory: stock.toInventory(), Added: true}
		return nil
	})
	if err != nil {
		return RestockResult{}, fmt.Errorf("restock %s by %s: %w", skuID, requestID, err)
	}
	return out, nil
}

// resetBuckets empties and removes a SKU's bucket rows as PutSKU starts a
// new sale: each row's last entry (RESET, relative to the row) takes it to
// zero, so every row's journal still replays it and the SKU's sums stay
// the sum of its rows.
func resetBuckets(tx *gorm.DB, rows []bucketRow, ref string, ts time.Time) error {
	if len(rows) == 0 {
		return nil
	}
	journal := make([]journalRow, 0, len(rows))
	for _, r := range rows {
		j := journalFor(inventoryRow{SKUID: r.SKUID}, fmt.Sprintf("%s-b%d", ref, r.Bucket), journalReset,
			-r.Available, -r.Frozen, -r.Sold, "reset: bucket row removed", ts)
		b := r.Bucket
		j.Bucket = &b
		journal = append(journal, j)
	}
	if err := tx.Create(&journal).Error; err != nil {
		return err
	}
	return tx.Where("sku_id = ?", rows[0].SKUID).Delete(&bucketRow{}).Error
}
