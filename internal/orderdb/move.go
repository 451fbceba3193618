package orderdb

// A move of units on a SKU's stock row: the conditional UPDATE that takes
// the row's lock and the journal entry that reads the row back under it.
// Every transaction that moves stock ends with its moves, so the hot row
// is locked for as little as the database lets: its own round trip and the
// COMMIT's (issue 26, "a short hot-row section").

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"gorm.io/gorm"
)

// stockMove is one move of a SKU's units between available, frozen and
// sold, on its inventory row or one of its bucket rows. The UPDATE refuses
// (matches no row) unless the row has the units the deltas take, and, when
// sale is set, unless the row belongs to the sale its caller read prices
// and limits from.
type stockMove struct {
	sku string
	// bucket names the bucket row; nil: the inventory row.
	bucket                 *int
	dAvail, dFrozen, dSold int64
	// dTotal carries units between a SKU's rows (MOVE): they leave one
	// row's total and available and enter another's.
	dTotal int64
	// resync flags the SKU for a Redis resync (a degraded order's units,
	// which Redis did not see); always on the inventory row.
	resync bool
	sale   *time.Time
	// The journal entry: ref (order or request id), type and reason.
	ref, typ, reason string
	at               time.Time
}

// moveSQL is the move on the inventory row; bucketMoveSQL on a bucket row.
const (
	moveSQL = `UPDATE inventory SET total = total + ?, available = available + ?, frozen = frozen + ?, sold = sold + ?,
	redis_resync = redis_resync + ?, updated_at = ?
	WHERE sku_id = ? AND available >= ? AND frozen >= ? AND sold >= ?`
	bucketMoveSQL = `UPDATE inventory_buckets SET total = total + ?, available = available + ?, frozen = frozen + ?, sold = sold + ?,
	updated_at = ?
	WHERE sku_id = ? AND bucket = ? AND available >= ? AND frozen >= ? AND sold >= ?`
)

// journalSQL writes the move's entry with the row's values as the move
// left them: it runs under the UPDATE's lock, so entries of a row are in
// the order of its changes and each starts where the previous ended.
const (
	journalSQL = `INSERT INTO inventory_journal (sku_id, ref_id, type, delta_available, delta_frozen, delta_sold,
	available_before, available_after, frozen_after, sold_after, reason, created_at)
	SELECT sku_id, ?, ?, ?, ?, ?, available - ?, available, frozen, sold, ?, ? FROM inventory WHERE sku_id = ?`
	bucketJournalSQL = `INSERT INTO inventory_journal (sku_id, bucket, ref_id, type, delta_available, delta_frozen, delta_sold,
	available_before, available_after, frozen_after, sold_after, reason, created_at)
	SELECT sku_id, bucket, ?, ?, ?, ?, ?, available - ?, available, frozen, sold, ?, ? FROM inventory_buckets WHERE sku_id = ? AND bucket = ?`
)

// apply runs m. It reports false, having changed nothing, when the row
// lacks the units or belongs to another sale (or does not exist).
//
// With batch (the server takes several statements in one packet) the
// UPDATE and the journal's INSERT travel together, the INSERT guarded by
// ROW_COUNT() so it writes only after an UPDATE that moved the units: the
// row lock is then held for one round trip and the COMMIT. Without it
// (the demo's go-mysql-server) they are two round trips.
func (s *Store) apply(tx *gorm.DB, m stockMove) (bool, error) {
	need := func(d int64) int64 { return max(0, -d) }
	resync := 0
	if m.resync && m.bucket == nil {
		resync = 1
	}
	var upd, journal string
	var args, jargs []any
	if m.bucket == nil {
		upd, journal = moveSQL, journalSQL
		args = []any{m.dTotal, m.dAvail, m.dFrozen, m.dSold, resync, m.at, m.sku, need(m.dAvail), need(m.dFrozen), need(m.dSold)}
		jargs = []any{m.ref, m.typ, m.dAvail, m.dFrozen, m.dSold, m.dAvail, m.reason, m.at, m.sku}
	} else {
		upd, journal = bucketMoveSQL, bucketJournalSQL
		args = []any{m.dTotal, m.dAvail, m.dFrozen, m.dSold, m.at, m.sku, *m.bucket, need(m.dAvail), need(m.dFrozen), need(m.dSold)}
		jargs = []any{m.ref, m.typ, m.dAvail, m.dFrozen, m.dSold, m.dAvail, m.reason, m.at, m.sku, *m.bucket}
	}
	if m.sale != nil {
		upd += " AND sale_started_at = ?"
		args = append(args, *m.sale)
	}
	moved, err := s.moveAndJournal(tx, upd, args, journal, jargs)
	if err != nil || !moved {
		return false, err
	}
	if m.resync && m.bucket != nil {
		// The flag lives on the inventory row, a lock the move on a bucket
		// row did not need; degraded orders are few (DEGRADED_CONCURRENCY).
		err := tx.Exec(`UPDATE inventory SET redis_resync = redis_resync + 1 WHERE sku_id = ?`, m.sku).Error
		if err != nil {
			return false, fmt.Errorf("flag sku %s for resync: %w", m.sku, err)
		}
	}
	return true, nil
}

func (s *Store) moveAndJournal(tx *gorm.DB, upd string, args []any, journal string, jargs []any) (bool, error) {
	if s.batch {
		res := tx.Exec(upd+";\n"+journal+" AND ROW_COUNT() = 1", append(args, jargs...)...)
		if res.Error != nil {
			return false, fmt.Errorf("move stock: %w", res.Error)
		}
		return res.RowsAffected == 1, nil
	}
	res := tx.Exec(upd, args...)
	if res.Error != nil {
		return false, fmt.Errorf("move stock: %w", res.Error)
	}
	if res.RowsAffected == 0 {
		return false, nil
	}
	if err := tx.Exec(journal, jargs...).Error; err != nil {
		return false, fmt.Errorf("journal the move: %w", err)
	}
	return true, nil
}

// probeBatch reports whether the server runs two statements sent in one
// packet, with arguments (interpolated by the client) and ROW_COUNT():
// MariaDB and MySQL do; the demo's go-mysql-server may not, and the store
// then sends them one by one.
func probeBatch(ctx context.Context, db *sql.DB) bool {
	_, err := db.ExecContext(ctx, "SET @flashsale_probe = ?; SET @flashsale_probe = ROW_COUNT()", 1)
	return err == nil
}
