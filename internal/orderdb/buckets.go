package orderdb

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"time"

	"github.com/flashsale/flashsale"

	"gorm.io/gorm"
)

// SetBuckets records a SKU's Redis bucket count after a mid-sale resize, so
// a later preheat or restore of the SKU lays Redis out the same way. It
// touches no stock column, so it needs no journal entry and is safe while
// orders hold units. It returns the row as it is afterwards, or
// UnknownSKU.
func (s *Store) SetBuckets(ctx context.Context, skuID string, buckets int) (Inventory, error) {
	if err := flashsale.CheckID("sku_id", skuID, flashsale.MaxIDLength); err != nil {
		return Inventory{}, fmt.Errorf("set buckets %s: %w", skuID, err)
	}
	if err := flashsale.CheckBuckets(buckets); err != nil {
		return Inventory{}, fmt.Errorf("set buckets %s: %w", skuID, err)
	}
	var out inventoryRow
	err := s.writeTx(ctx, nil, func(tx *gorm.DB) error {
		// Locked read, not RowsAffected: MySQL reports 0 affected rows for
		// an update that changes nothing, which is not "unknown sku".
		var err error
		if out, err = lockInventory(tx, skuID); err != nil {
			return err
		}
		if out.BucketCount == buckets {
			return nil
		}
		ts := now()
		return tx.Model(&inventoryRow{}).Where("sku_id = ?", skuID).UpdateColumns(map[string]any{
			"bucket_count": buckets,
			"updated_at":   ts,
		}).Error
	})
	if err == nil {
		// The SKU's truth, with its bucket rows: out was its row alone.
		out, err = takeStock(s.db.WithContext(ctx), skuID)
	}
	if err != nil {
		return Inventory{}, fmt.Errorf("set buckets %s: %w", skuID, err)
	}
	return out.toInventory(), nil
}

// bucketRow is one bucket row of a SKU's stock (migrations/00006): a stock
// row of its own, its units part of the SKU's.
type bucketRow struct {
	SKUID         string    `gorm:"column:sku_id;primaryKey"`
	Bucket        int       `gorm:"column:bucket;primaryKey"`
	Total         int64     `gorm:"column:total"`
	Available     int64     `gorm:"column:available"`
	Frozen        int64     `gorm:"column:frozen"`
	Sold          int64     `gorm:"column:sold"`
	SaleStartedAt time.Time `gorm:"column:sale_started_at"`
	UpdatedAt     time.Time `gorm:"column:updated_at;autoUpdateTime:false"`
}

func (bucketRow) TableName() string { return "inventory_buckets" }

// SplitStock moves the available units on sku's inventory row into n bucket
// rows, spread as evenly as Redis's preheat spreads its buckets, so orders
// of the SKU take their units from n row locks instead of one. The SKU's
// truth (Inventory) stays the same: its row plus its bucket rows. Each
// row's move is journaled (MOVE; the deltas sum to zero over the SKU).
//
// A create takes from the row of the bucket Redis took its units from
// (NewOrder.Buckets; without one, crc32(order id) % rows, where Redis
// starts its walk), then from any row with the units, then gathers
// them onto the inventory row when no single row has enough. Units that
// come back (releases) go back to the row they were frozen in; restocked
// units land on the inventory row until the next SplitStock. With another
// n than the SKU's rows (Redis was resized), the rows' available units are
// collected and spread over n anew. Call it when the SKU is defined or
// preheated, after a restock or a resize; it is safe while orders run (it
// locks the SKU's rows for one transaction). It returns the SKU's stock
// afterwards.
func (s *Store) SplitStock(ctx context.Context, skuID string, n int) (Inventory, error) {
	if err := flashsale.CheckID("sku_id", skuID, flashsale.MaxIDLength); err != nil {
		return Inventory{}, fmt.Errorf("split stock %s: %w", skuID, err)
	}
	if err := flashsale.CheckBuckets(n); err != nil {
		return Inventory{}, fmt.Errorf("split stock %s: %w", skuID, err)
	}
	ref := fmt.Sprintf("split-%d", time.Now().UnixNano())
	err := s.writeTx(ctx, nil, func(tx *gorm.DB) error {
		inv, err := lockInventory(tx, skuID)
		if err != nil {
			return err
		}
		ts := now()
		rows := max(inv.BucketRows, n)
		if inv.BucketRows > 0 && inv.BucketRows != n {
			// Another count (Redis was resized): the rows' available
			// units come back to the SKU's row first, to be spread over n.
			got, err := s.collect(tx, inv, ref, ts)
			if err != nil {
				return err
			}
			inv.Available += got
			rows = n
		}
		if inv.Available == 0 {
			return tx.Exec(`UPDATE inventory SET bucket_rows = ? WHERE sku_id = ?`, rows, skuID).Error
		}
		// The inventory row first (it is locked already), then the
		// bucket rows in ascending order.
		moved, err := s.apply(tx, stockMove{sku: skuID, dTotal: -inv.Available, dAvail: -inv.Available,
			ref: ref, typ: journalMove, reason: fmt.Sprintf("split into %d bucket rows", n), at: ts})
		if err != nil || !moved {
			return cmp.Or(err, fmt.Errorf("inventory row changed under its lock"))
		}
		for b := range n {
			share := inv.Available / int64(n)
			if int64(b) < inv.Available%int64(n) {
				share++
			}
			if share == 0 {
				continue
			}
			err := tx.Exec(`INSERT INTO inventory_buckets (sku_id, bucket, total, available, sale_started_at, updated_at)
				VALUES (?, ?, 0, 0, ?, ?) ON DUPLICATE KEY UPDATE sku_id = sku_id`, skuID, b, inv.SaleStartedAt, ts).Error
			if err != nil {
				return err
			}
			moved, err := s.apply(tx, stockMove{sku: skuID, bucket: &b, dTotal: share, dAvail: share,
				ref: fmt.Sprintf("%s-b%d", ref, b), typ: journalMove, reason: "split from the inventory row", at: ts})
			if err != nil || !moved {
				return cmp.Or(err, fmt.Errorf("bucket row %d refused %d units", b, share))
			}
		}
		return tx.Exec(`UPDATE inventory SET bucket_rows = ? WHERE sku_id = ?`, rows, skuID).Error
	})
	if err != nil {
		return Inventory{}, fmt.Errorf("split stock %s: %w", skuID, err)
	}
	return s.Inventory(ctx, skuID)
}

// collect carries the available units of every bucket row of inv's SKU
// back to its inventory row (locked by the caller), rows in ascending
// order under FOR UPDATE, and returns how many. Orders keep their frozen
// and sold units in their rows, and give units back there; a create finds
// them wherever they are (pickRow walks every row the SKU has).
func (s *Store) collect(tx *gorm.DB, inv inventoryRow, ref string, ts time.Time) (int64, error) {
	var rows []bucketRow
	if err := tx.Clauses(forUpdate).Where("sku_id = ? AND available > 0", inv.SKUID).Order("bucket").Find(&rows).Error; err != nil {
		return 0, err
	}
	var got int64
	for _, r := range rows {
		b := r.Bucket
		moved, err := s.apply(tx, stockMove{sku: inv.SKUID, bucket: &b, dTotal: -r.Available, dAvail: -r.Available,
			ref: fmt.Sprintf("%s-c%d", ref, b), typ: journalMove, reason: "collected for a new split", at: ts})
		if err != nil || !moved {
			return 0, cmp.Or(err, fmt.Errorf("bucket row %d changed under its lock", b))
		}
		got += r.Available
	}
	if got == 0 {
		return 0, nil
	}
	moved, err := s.apply(tx, stockMove{sku: inv.SKUID, dTotal: got, dAvail: got,
		ref: ref + "-c", typ: journalMove, reason: "collected from bucket rows for a new split", at: ts})
	if err != nil || !moved {
		return 0, cmp.Or(err, fmt.Errorf("inventory row changed under its lock"))
	}
	return got, nil
}

// readForCreate reads, without a lock and in one statement, the rows of
// skus and their bucket rows (bucket rows by SKU, in bucket order, with
// what pickRow and gather need: bucket, available, sale). A SKU without a
// row is absent. One round trip, as the read of the SKU's row alone was.
func readForCreate(tx *gorm.DB, skus []string) (map[string]inventoryRow, map[string][]bucketRow, error) {
	var rows []struct {
		Row        inventoryRow `gorm:"embedded"`
		BBucket    *int         `gorm:"column:b_bucket"`
		BAvailable int64        `gorm:"column:b_available"`
		BSale      *time.Time   `gorm:"column:b_sale"`
	}
	err := tx.Raw(`SELECT i.*, b.bucket AS b_bucket, COALESCE(b.available, 0) AS b_available, b.sale_started_at AS b_sale
		FROM inventory i LEFT JOIN inventory_buckets b ON b.sku_id = i.sku_id
		WHERE i.sku_id IN ? ORDER BY i.sku_id, b.bucket`, skus).Scan(&rows).Error
	if err != nil {
		return nil, nil, fmt.Errorf("read inventory: %w", err)
	}
	invs := make(map[string]inventoryRow, len(skus))
	var buckets map[string][]bucketRow
	for _, r := range rows {
		invs[r.Row.SKUID] = r.Row
		if r.BBucket == nil || r.BSale == nil {
			continue
		}
		if buckets == nil {
			buckets = make(map[string][]bucketRow)
		}
		buckets[r.Row.SKUID] = append(buckets[r.Row.SKUID], bucketRow{SKUID: r.Row.SKUID, Bucket: *r.BBucket, Available: r.BAvailable, SaleStartedAt: *r.BSale})
	}
	return invs, buckets, nil
}

// pickRow chooses the row a line of qty units of a bucketed SKU takes from,
// by what an unlocked read found: the bucket row start names (the bucket
// Redis took the units from, NewOrder.Buckets), or without one
// crc32(order id) % rows, where Redis starts its walk for the order; then
// the next bucket rows in Redis's order, then the inventory row (nil). ok
// is false when no single row has qty units.
func pickRow(orderID string, start *int, inv inventoryRow, rows []bucketRow, qty int64) (bucket *int, ok bool) {
	if len(rows) > 0 {
		byBucket := make(map[int]bucketRow, len(rows))
		for _, r := range rows {
			byBucket[r.Bucket] = r
		}
		n := max(inv.BucketRows, rows[len(rows)-1].Bucket+1)
		first := int(crc32.ChecksumIEEE([]byte(orderID)) % uint32(n))
		if start != nil && *start >= 0 {
			// Redis may have more buckets than MySQL has rows (a resize
			// not split yet): the same walk, from the same place.
			first = *start % n
		}
		for k := range n {
			if r, found := byBucket[(first+k)%n]; found && r.Available >= qty && r.SaleStartedAt.Equal(inv.SaleStartedAt) {
				b := r.Bucket
				return &b, true
			}
		}
	}
	return nil, inv.Available >= qty
}

// gather carries every available unit of the SKU's bucket rows onto its
// inventory row, for a line that no single row could serve (units spread
// thin at the end of a sale). Rows in ascending order, then the inventory
// row. errRowRaced when a row no longer has what the read found.
func (s *Store) gather(tx *gorm.DB, inv inventoryRow, rows []bucketRow, orderID string, ts time.Time) error {
	// The order's hash beside the clock: two gathers in one nanosecond
	// (two processes) still journal under different keys.
	ref := fmt.Sprintf("gather-%d-%08x", time.Now().UnixNano(), crc32.ChecksumIEEE([]byte(orderID)))
	reason := "gathered for order " + orderID
	var got int64
	for _, r := range rows {
		if r.Available == 0 {
			continue
		}
		b := r.Bucket
		moved, err := s.apply(tx, stockMove{sku: inv.SKUID, bucket: &b, dTotal: -r.Available, dAvail: -r.Available,
			sale: &inv.SaleStartedAt, ref: fmt.Sprintf("%s-b%d", ref, b), typ: journalMove, reason: reason, at: ts})
		if err != nil {
			return err
		}
		if !moved {
			return errRowRaced
		}
		got += r.Available
	}
	moved, err := s.apply(tx, stockMove{sku: inv.SKUID, dTotal: got, dAvail: got,
		ref: ref, typ: journalMove, reason: reason, at: ts})
	if err != nil || !moved {
		return cmp.Or(err, errRowRaced)
	}
	return nil
}

// errRowRaced: a row an unlocked read found with the units had lost them
// by the time the transaction locked it. The transaction runs again on a
// fresh read.
var errRowRaced = errors.New("a stock row changed since it was read")

// stockRow is a SKU's inventory row with the sums of its bucket rows.
type stockRow struct {
	// Row is exported: GORM sets no unexported field, embedded or not.
	Row        inventoryRow `gorm:"embedded"`
	BTotal     int64        `gorm:"column:b_total"`
	BAvailable int64        `gorm:"column:b_available"`
	BFrozen    int64        `gorm:"column:b_frozen"`
	BSold      int64        `gorm:"column:b_sold"`
}

// takeStock reads a SKU's truth: its inventory row plus its bucket rows,
// column by column, in one statement (so one consistent read), or
// UnknownSKU. Every reader of a SKU's stock uses it; writes lock the row
// they move.
func takeStock(tx *gorm.DB, skuID string) (inventoryRow, error) {
	var rows []stockRow
	// Through the query builder on the inventory table, as a read of the
	// row alone was (the API's tests count the SKU's reads that way).
	err := tx.Table("inventory").
		Select(`inventory.*, COALESCE(b.total, 0) AS b_total, COALESCE(b.available, 0) AS b_available,
			COALESCE(b.frozen, 0) AS b_frozen, COALESCE(b.sold, 0) AS b_sold`).
		Joins(`LEFT JOIN (SELECT sku_id, SUM(total) AS total, SUM(available) AS available, SUM(frozen) AS frozen, SUM(sold) AS sold
			FROM inventory_buckets WHERE sku_id = ? GROUP BY sku_id) b ON b.sku_id = inventory.sku_id`, skuID).
		Where("inventory.sku_id = ?", skuID).Find(&rows).Error
	if err != nil {
		return inventoryRow{}, err
	}
	if len(rows) == 0 {
		return inventoryRow{}, flashsale.Errorf(flashsale.UnknownSKU, "unknown sku")
	}
	r := rows[0]
	inv := r.Row
	inv.Total += r.BTotal
	inv.Available += r.BAvailable
	inv.Frozen += r.BFrozen
	inv.Sold += r.BSold
	return inv, nil
}
