package orderdb

// Reconciliation's gate: drifts too large to correct unattended, held for
// a person (migrations/00016_reconcile_holds.sql).

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// Hold statuses.
const (
	HoldPending  = "PENDING"
	HoldApproved = "APPROVED"
	HoldRejected = "REJECTED"
	HoldApplied  = "APPLIED"
)

// Hold is a confirmed drift held for a person.
type Hold struct {
	ID        int64      `json:"id" gorm:"column:id;primaryKey;autoIncrement"`
	SKU       string     `json:"sku_id" gorm:"column:sku_id"`
	Drift     int64      `json:"drift" gorm:"column:drift"`
	Fence     int64      `json:"fence" gorm:"column:fence"`
	Status    string     `json:"status" gorm:"column:status"`
	Report    string     `json:"report" gorm:"column:report"`
	CreatedAt time.Time  `json:"created_at" gorm:"column:created_at;autoCreateTime:false"`
	DecidedAt *time.Time `json:"decided_at,omitempty" gorm:"column:decided_at"`
	DecidedBy string     `json:"decided_by,omitempty" gorm:"column:decided_by"`
}

// TableName implements gorm's Tabler.
func (Hold) TableName() string { return "reconcile_holds" }

// HoldDrift records a confirmed drift the run may not correct by itself,
// once per SKU, drift and fence, and returns the row: the one written
// now, or the one an earlier run wrote (with its decision).
func (s *Store) HoldDrift(ctx context.Context, sku string, drift, fence int64, report string) (Hold, error) {
	h := Hold{SKU: sku, Drift: drift, Fence: fence, Status: HoldPending, Report: report, CreatedAt: now()}
	db := s.db.WithContext(ctx)
	if err := db.Clauses(clause.OnConflict{DoNothing: true}).Create(&h).Error; err != nil {
		return Hold{}, fmt.Errorf("hold drift of %s: %w", sku, classify(err, nil))
	}
	var stored Hold
	if err := db.Where("sku_id = ? AND drift = ? AND fence = ?", sku, drift, fence).Take(&stored).Error; err != nil {
		return Hold{}, fmt.Errorf("hold drift of %s: %w", sku, classify(err, nil))
	}
	return stored, nil
}

// Holds lists the holds in status (all when empty), newest first.
func (s *Store) Holds(ctx context.Context, status string) ([]Hold, error) {
	q := s.db.WithContext(ctx).Order("id DESC").Limit(1000)
	if status != "" {
		q = q.Where("status = ?", status)
	}
	var out []Hold
	if err := q.Find(&out).Error; err != nil {
		return nil, fmt.Errorf("reconcile holds: %w", err)
	}
	return out, nil
}

// CountPendingHolds counts the holds waiting for a person.
func (s *Store) CountPendingHolds(ctx context.Context) (int64, error) {
	var n int64
	if err := s.db.WithContext(ctx).Model(&Hold{}).Where("status = ?", HoldPending).Count(&n).Error; err != nil {
		return 0, fmt.Errorf("count reconcile holds: %w", err)
	}
	return n, nil
}

// DecideHold approves or rejects a PENDING hold (by is who). Deciding it
// again the same way answers the row; the other way, or a hold already
// applied, is Invalid.
func (s *Store) DecideHold(ctx context.Context, id int64, approve bool, by string) (Hold, error) {
	to := HoldRejected
	if approve {
		to = HoldApproved
	}
	var out Hold
	err := s.writeTx(ctx, nil, func(tx *gorm.DB) error {
		err := tx.Clauses(forUpdate).Where("id = ?", id).Take(&out).Error
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return invalidf("no reconcile hold %d", id)
		}
		if err != nil || out.Status == to {
			return err
		}
		if out.Status != HoldPending {
			return invalidf("reconcile hold %d is %s", id, out.Status)
		}
		ts := now()
		out.Status, out.DecidedAt, out.DecidedBy = to, &ts, truncate(by, 128)
		return tx.Model(&Hold{}).Where("id = ?", id).
			UpdateColumns(map[string]any{"status": to, "decided_at": ts, "decided_by": out.DecidedBy}).Error
	})
	if err != nil {
		return Hold{}, fmt.Errorf("decide reconcile hold %d: %w", id, err)
	}
	return out, nil
}

// MarkHoldApplied records that a run corrected an approved hold's drift.
func (s *Store) MarkHoldApplied(ctx context.Context, id int64) error {
	err := s.db.WithContext(ctx).Model(&Hold{}).Where("id = ? AND status = ?", id, HoldApproved).
		UpdateColumn("status", HoldApplied).Error
	if err != nil {
		return fmt.Errorf("mark reconcile hold %d applied: %w", id, err)
	}
	return nil
}

// JournalSince lists a SKU's journal entries (its rows' moves) newer than
// since, oldest first, at most limit: what a held drift's report shows
// beside the observations.
func (s *Store) JournalSince(ctx context.Context, sku string, since time.Time, limit int) ([]JournalEntry, error) {
	var rows []journalRow
	if err := s.db.WithContext(ctx).Where("sku_id = ? AND created_at > ?", sku, since.UTC()).
		Order("id").Limit(limit).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("journal of %s: %w", sku, err)
	}
	out := make([]JournalEntry, len(rows))
	for i, r := range rows {
		out[i] = JournalEntry{Ref: r.RefID, Type: r.Type, Available: r.DeltaAvailable, Frozen: r.DeltaFrozen,
			Sold: r.DeltaSold, AvailableAfter: r.AvailableAfter, At: r.CreatedAt.UTC()}
	}
	return out, nil
}

// JournalEntry is one move of a SKU's units, as a report shows it.
type JournalEntry struct {
	Ref            string    `json:"ref_id"`
	Type           string    `json:"type"`
	Available      int64     `json:"delta_available"`
	Frozen         int64     `json:"delta_frozen"`
	Sold           int64     `json:"delta_sold"`
	AvailableAfter int64     `json:"available_after"`
	At             time.Time `json:"at"`
}
