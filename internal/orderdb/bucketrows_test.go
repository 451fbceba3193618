//go:build integration

package orderdb_test

import (
	"context"
	"fmt"
	"hash/crc32"
	"testing"

	"github.com/flashsale/flashsale"

	"github.com/stretchr/testify/require"

	"github.com/flashsale/flashsale/internal/orderdb"
)

// checkRows verifies what the bucket rows add to checkInvariants: every
// row balances, the SKU's truth is its row plus its bucket rows, every
// line's units are frozen or sold in the row it names, and the store's
// own audit finds the journal replaying each row.
func checkRows(t *testing.T, s *orderdb.Store, sku string) {
	t.Helper()
	require.Zero(t, count(t, s, `SELECT COUNT(*) FROM inventory_buckets
		WHERE sku_id = ? AND available + frozen + sold <> total`, sku), "bucket rows balance")
	inv := inventory(t, s, sku)
	var sum struct{ Total, Available, Frozen, Sold int64 }
	require.NoError(t, s.DB().Raw(`SELECT i.total + COALESCE(SUM(b.total), 0) AS total, i.available + COALESCE(SUM(b.available), 0) AS available,
			i.frozen + COALESCE(SUM(b.frozen), 0) AS frozen, i.sold + COALESCE(SUM(b.sold), 0) AS sold
		FROM inventory i LEFT JOIN inventory_buckets b ON b.sku_id = i.sku_id WHERE i.sku_id = ? GROUP BY i.sku_id`, sku).Scan(&sum).Error)
	require.Equal(t, []int64{sum.Total, sum.Available, sum.Frozen, sum.Sold}, []int64{inv.Total, inv.Available, inv.Frozen, inv.Sold},
		"the SKU is its row plus its bucket rows")
	// Per row (bucket NULL: the inventory row), frozen and sold are the
	// units of the pending and paid lines that name it.
	require.Zero(t, count(t, s, `SELECT COUNT(*) FROM inventory_buckets b WHERE b.sku_id = ? AND (
			b.frozen <> (SELECT COALESCE(SUM(i.quantity), 0) FROM order_items i JOIN orders o ON o.order_id = i.order_id
				WHERE i.sku_id = b.sku_id AND i.bucket = b.bucket AND o.status = 'PENDING_PAYMENT')
			OR b.sold <> (SELECT COALESCE(SUM(i.quantity), 0) FROM order_items i JOIN orders o ON o.order_id = i.order_id
				WHERE i.sku_id = b.sku_id AND i.bucket = b.bucket AND o.status = 'PAID'))`, sku), "each bucket row holds its lines' units")
	a, err := s.AuditSKU(context.Background(), sku)
	require.NoError(t, err)
	require.Zero(t, a.Journal.Breaks, "every row's journal chains (first break %d)", a.Journal.FirstBreak)
	require.Equal(t, []int64{inv.Available, inv.Frozen, inv.Sold}, []int64{a.Journal.LastAvailable, a.Journal.LastFrozen, a.Journal.LastSold},
		"the rows' newest entries end at the SKU's truth")
	require.Empty(t, a.OrderJournals)
	checkInvariants(t, s, sku)
}

// A sale on bucket rows: 160 buyers, some asking for 2 or 3 units, race
// for 40 units in 16 rows. Exactly the stock is sold however the units
// fall (lines spanning rows are gathered), then pays and cancels run at
// once and each line's units go back to, or are sold in, their row.
func TestBucketRowsSale(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	const stock, buyers, rows = 40, 160, 16
	putSKU(t, s, "split", stock, 100)
	inv, err := s.SplitStock(ctx, "split", rows)
	require.NoError(t, err)
	require.Equal(t, orderdb.Inventory{SKU: "split", Total: stock, Available: stock, Price: 100, Buckets: 4, PerUserLimit: testUserLimit}, inv)
	require.Equal(t, int64(rows), count(t, s, `SELECT COUNT(*) FROM inventory_buckets WHERE sku_id = 'split'`))
	checkRows(t, s, "split")

	qty := func(i int) int64 { return int64(1 + i%3) }
	errs := make([]error, buyers)
	fns := make([]func(), buyers)
	for i := range buyers {
		fns[i] = func() {
			_, errs[i] = s.CreateOrder(ctx, newOrder(fmt.Sprintf("o-%03d", i), fmt.Sprintf("u-%03d", i), item("split", qty(i))))
		}
	}
	run(fns)
	var won []string
	var units int64
	for i, err := range errs {
		if err == nil {
			won = append(won, fmt.Sprintf("o-%03d", i))
			units += qty(i)
			continue
		}
		require.ErrorIs(t, err, &flashsale.Error{Code: flashsale.StockDrift}, "the only acceptable failure")
	}
	inv = inventory(t, s, "split")
	require.Equal(t, units, inv.Frozen, "frozen = the winners' units")
	require.Equal(t, stock-units, inv.Available)
	// Refused buyers asked for more than was left: no order of one unit
	// was refused while a unit remained.
	require.Less(t, inv.Available, int64(3), "no undersell beyond a line bigger than what is left")
	if inv.Available > 0 {
		for i, err := range errs {
			if err != nil {
				require.Greater(t, qty(i), inv.Available, "order %d refused with %d left", i, inv.Available)
			}
		}
	}
	checkRows(t, s, "split")

	fns = fns[:0]
	for k, id := range won {
		fns = append(fns, func() {
			if k%2 == 0 {
				o, err := s.Order(ctx, id)
				require.NoError(t, err)
				_, err = s.ConfirmPayment(ctx, id, "txn-"+id, o.Amount)
				require.NoError(t, err)
				return
			}
			_, err := s.CloseOrder(ctx, id, flashsale.StatusExpired, "timeout")
			require.NoError(t, err)
		})
	}
	run(fns)
	inv = inventory(t, s, "split")
	require.Zero(t, inv.Frozen)
	require.Equal(t, int64(stock), inv.Available+inv.Sold)
	checkRows(t, s, "split")

	// A new sale empties and removes the bucket rows.
	_, err = s.PutSKU(ctx, flashsale.SKU{ID: "split", Total: 10, Price: 100, Buckets: 4, PerUserLimit: testUserLimit})
	require.NoError(t, err)
	require.Zero(t, count(t, s, `SELECT COUNT(*) FROM inventory_buckets WHERE sku_id = 'split'`))
	require.Equal(t, orderdb.Inventory{SKU: "split", Total: 10, Available: 10, Price: 100, Buckets: 4, PerUserLimit: testUserLimit}, inventory(t, s, "split"))
	a, err := s.AuditSKU(ctx, "split")
	require.NoError(t, err)
	require.Zero(t, a.Journal.Breaks)
	require.Equal(t, int64(10), a.Journal.Available)
}

// PutSKU refuses a SKU whose units are frozen in a bucket row; restocked
// units land on the SKU's row and are sold from there when the bucket rows
// run dry; a degraded order on a bucket row still flags the SKU for a
// Redis resync.
func TestBucketRowsRestockAndDegraded(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	putSKU(t, s, "mix", 4, 100)
	_, err := s.SplitStock(ctx, "mix", 4)
	require.NoError(t, err)
	require.Zero(t, count(t, s, `SELECT available FROM inventory WHERE sku_id = 'mix'`), "every unit is on a bucket row")

	o := newOrder("d1", "alice", item("mix", 1))
	o.Degraded = true
	_, err = s.CreateOrder(ctx, o)
	require.NoError(t, err)
	require.Equal(t, int64(1), inventory(t, s, "mix").RedisResync)
	_, err = s.PutSKU(ctx, flashsale.SKU{ID: "mix", Total: 4, Price: 100, Buckets: 4, PerUserLimit: testUserLimit})
	require.ErrorIs(t, err, &flashsale.Error{Code: flashsale.SKUInUse}, "a frozen unit in a bucket row is in use")

	_, err = s.Restock(ctx, "mix", 3, "r1")
	require.NoError(t, err)
	for i := range 6 {
		createOrder(t, s, fmt.Sprintf("m%d", i), item("mix", 1))
	}
	_, err = s.CreateOrder(ctx, newOrder("m-last", "bob", item("mix", 1)))
	require.ErrorIs(t, err, &flashsale.Error{Code: flashsale.StockDrift})
	inv := inventory(t, s, "mix")
	require.Equal(t, []int64{7, 0, 7}, []int64{inv.Total, inv.Available, inv.Frozen})
	require.Equal(t, int64(3), count(t, s, `SELECT COUNT(*) FROM order_items WHERE sku_id = 'mix' AND bucket IS NULL`),
		"the restocked units were sold from the SKU's row")
	_, err = s.CloseOrder(ctx, "d1", flashsale.StatusCancelled, "changed mind")
	require.NoError(t, err)
	require.Equal(t, int64(2), inventory(t, s, "mix").RedisResync, "the degraded order's release flags it again")
	checkRows(t, s, "mix")
}

// A line no single row can serve is served from all of them together.
func TestBucketRowsGather(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	putSKU(t, s, "thin", 6, 100)
	_, err := s.SplitStock(ctx, "thin", 4) // 2, 2, 1, 1
	require.NoError(t, err)
	o := createOrder(t, s, "big", item("thin", 5))
	require.Equal(t, int64(500), o.Amount)
	require.Equal(t, int64(1), count(t, s, `SELECT COUNT(*) FROM order_items WHERE order_id = 'big' AND bucket IS NULL`))
	inv := inventory(t, s, "thin")
	require.Equal(t, []int64{6, 1, 5}, []int64{inv.Total, inv.Available, inv.Frozen})
	checkRows(t, s, "thin")
	_, err = s.CloseOrder(ctx, "big", flashsale.StatusCancelled, "changed mind")
	require.NoError(t, err)
	createOrder(t, s, "all", item("thin", 6))
	checkRows(t, s, "thin")
}

// A create takes the row of the bucket Redis took its units from
// (NewOrder.Buckets), wherever crc32 of its id would have started; when
// that row is empty it walks on from there, and a bucket past the rows (Redis
// resized, MySQL not split yet) starts the same walk modulo the rows.
func TestBucketRowsTakeTheRedisBucket(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	split := func(sku string, units int64) {
		putSKU(t, s, sku, units, 100)
		_, err := s.SplitStock(ctx, sku, 4)
		require.NoError(t, err)
	}
	create := func(sku, id string, bucket int) int64 {
		t.Helper()
		o := newOrder(id, "user-"+id, item(sku, 1))
		o.Buckets = map[string]int{sku: bucket}
		_, err := s.CreateOrder(ctx, o)
		require.NoError(t, err)
		return count(t, s, `SELECT bucket FROM order_items WHERE order_id = ?`, id)
	}

	split("mirror", 8) // 2, 2, 2, 2
	for _, id := range []string{"m-a", "m-b"} {
		named := int(crc32.ChecksumIEEE([]byte(id))%4+1) % 4 // never where crc32 starts
		require.Equal(t, int64(named), create("mirror", id, named), "%s took from the bucket Redis named", id)
	}
	checkRows(t, s, "mirror")

	split("drained", 4) // 1, 1, 1, 1
	require.Equal(t, int64(1), create("drained", "d-1", 1))
	require.Equal(t, int64(2), create("drained", "d-2", 1), "an empty bucket row walks on to the next")
	checkRows(t, s, "drained")

	split("resized", 4)
	require.Equal(t, int64(3), create("resized", "r-7", 7), "bucket 7 of 8 in Redis against 4 rows: row 3")
	checkRows(t, s, "resized")
}

// A resize of the Redis buckets splits the rows anew: available units are
// collected and spread over the new count, orders keep their units in the
// rows they took them from (even rows past a shrink), and get them back
// there; the SKU's truth never moves.
func TestBucketRowsResplit(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	putSKU(t, s, "resize", 20, 100)
	_, err := s.SplitStock(ctx, "resize", 4)
	require.NoError(t, err)
	for i := range 6 {
		createOrder(t, s, fmt.Sprintf("r%d", i), item("resize", 1))
	}
	checkRows(t, s, "resize")

	inv, err := s.SplitStock(ctx, "resize", 8)
	require.NoError(t, err)
	require.Equal(t, []int64{20, 14, 6}, []int64{inv.Total, inv.Available, inv.Frozen})
	require.Equal(t, int64(8), count(t, s, `SELECT COUNT(*) FROM inventory_buckets WHERE sku_id = 'resize' AND available > 0`),
		"14 units over 8 rows")
	checkRows(t, s, "resize")

	_, err = s.SplitStock(ctx, "resize", 2)
	require.NoError(t, err)
	require.Zero(t, count(t, s, `SELECT COALESCE(SUM(available), 0) FROM inventory_buckets WHERE sku_id = 'resize' AND bucket >= 2`),
		"rows past the shrink keep no units on sale")
	for i := range 6 {
		_, err := s.CloseOrder(ctx, fmt.Sprintf("r%d", i), flashsale.StatusExpired, "timeout")
		require.NoError(t, err)
	}
	checkRows(t, s, "resize")
	// Every unit sells again, wherever it came back to.
	for i := range 20 {
		createOrder(t, s, fmt.Sprintf("again%d", i), item("resize", 1))
	}
	_, err = s.CreateOrder(ctx, newOrder("one-too-many", "x", item("resize", 1)))
	require.ErrorIs(t, err, &flashsale.Error{Code: flashsale.StockDrift})
	checkRows(t, s, "resize")
}

// Splits mid-sale (a restock's, a resize's) race the creates that read
// the SKU before them: a create that finds the units moved reads again,
// so no buyer is refused while units remain, and exactly the stock sells.
func TestBucketRowsSplitDuringSale(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	const stock, buyers = 150, 170
	putSKU(t, s, "moving", stock, 100)
	errs := make([]error, buyers)
	fns := make([]func(), 0, buyers+5)
	for i := range buyers {
		fns = append(fns, func() {
			_, errs[i] = s.CreateOrder(ctx, newOrder(fmt.Sprintf("m-%03d", i), fmt.Sprintf("u-%03d", i), item("moving", 1)))
		})
	}
	for _, n := range []int{4, 8, 2, 16, 4} {
		fns = append(fns, func() {
			_, err := s.SplitStock(ctx, "moving", n)
			require.NoError(t, err)
		})
	}
	run(fns)
	ok := 0
	for _, err := range errs {
		if err == nil {
			ok++
			continue
		}
		require.ErrorIs(t, err, &flashsale.Error{Code: flashsale.StockDrift}, "the only acceptable failure")
	}
	require.Equal(t, stock, ok, "exactly the stock sells, none refused while units remained")
	inv := inventory(t, s, "moving")
	require.Equal(t, []int64{0, stock}, []int64{inv.Available, inv.Frozen})
	checkRows(t, s, "moving")
}
