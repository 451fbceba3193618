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
// sold. The UPDATE refuses (matches no row) unless the row has the units
// the deltas take, and, when sale is set, unless the SKU's sale is still
// the one its caller read prices and limits from.
type stockMove struct {
	sku                    string
	dAvail, dFrozen, dSold int64
	// resync flags the SKU for a Redis resync in the same statement (a
	// degraded order's units, which Redis did not see).
	resync bool
	sale   *time.Time
	// The journal entry: ref (order or request id), type and reason.
	ref, typ, reason string
	at               time.Time
}

const moveSQL = `UPDATE inventory SET available = available + ?, frozen = frozen + ?, sold = sold + ?,
	redis_resync = redis_resync + ?, updated_at = ?
	WHERE sku_id = ? AND available >= ? AND frozen >= ?`

// journalSQL writes the move's entry with the row's values as the move
// left them: it runs under the UPDATE's lock, so entries of a SKU are in
// the order of its row's changes and each starts where the previous ended.
const journalSQL = `INSERT INTO inventory_journal (sku_id, ref_id, type, delta_available, delta_frozen, delta_sold,
	available_before, available_after, frozen_after, sold_after, reason, created_at)
	SELECT sku_id, ?, ?, ?, ?, ?, available - ?, available, frozen, sold, ?, ? FROM inventory WHERE sku_id = ?`

// apply runs m. It reports false, having changed nothing, when the row
// lacks the units or the sale moved (or the SKU is unknown).
//
// With batch (the server takes several statements in one packet) the
// UPDATE and the journal's INSERT travel together, the INSERT guarded by
// ROW_COUNT() so it writes only after an UPDATE that moved the units: the
// row lock is then held for one round trip and the COMMIT. Without it
// (the demo's go-mysql-server) they are two round trips.
func (s *Store) apply(tx *gorm.DB, m stockMove) (bool, error) {
	need := func(d int64) int64 { return max(0, -d) }
	resync := 0
	if m.resync {
		resync = 1
	}
	upd, args := moveSQL, []any{m.dAvail, m.dFrozen, m.dSold, resync, m.at, m.sku, need(m.dAvail), need(m.dFrozen)}
	if m.sale != nil {
		upd += " AND sale_started_at = ?"
		args = append(args, *m.sale)
	}
	jargs := []any{m.ref, m.typ, m.dAvail, m.dFrozen, m.dSold, m.dAvail, m.reason, m.at, m.sku}
	if s.batch {
		res := tx.Exec(upd+";\n"+journalSQL+" AND ROW_COUNT() = 1", append(args, jargs...)...)
		if res.Error != nil {
			return false, fmt.Errorf("move sku %s: %w", m.sku, res.Error)
		}
		return res.RowsAffected == 1, nil
	}
	res := tx.Exec(upd, args...)
	if res.Error != nil {
		return false, fmt.Errorf("move sku %s: %w", m.sku, res.Error)
	}
	if res.RowsAffected == 0 {
		return false, nil
	}
	if err := tx.Exec(journalSQL, jargs...).Error; err != nil {
		return false, fmt.Errorf("journal sku %s: %w", m.sku, err)
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
