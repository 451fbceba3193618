//go:build integration

package catalog_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/internal/catalog"
	"github.com/flashsale/flashsale/internal/inventory"
	"github.com/flashsale/flashsale/internal/orderdb"
	"github.com/flashsale/flashsale/internal/testenv"
)

// midSale is a catalog on the real MySQL and Redis; restock, resize and
// the stock view never ask Temporal.
func midSale(t *testing.T) (catalog.Catalog, *orderdb.Store) {
	t.Helper()
	db, err := orderdb.Open(context.Background(), testenv.MySQLDSN(t))
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	return catalog.Catalog{DB: db, Redis: inventory.New(testenv.Redis(t), inventory.Options{})}, db
}

func code(err error) flashsale.Code { return flashsale.ErrorCode(err) }

func TestRestockResizeAndStock(t *testing.T) {
	ctx := context.Background()
	c, db := midSale(t)
	sku := "midsale-" + testenv.UniqueID(t)

	// Defined in MySQL, never preheated: nothing on sale, and a restock
	// only reaches MySQL (the next preheat puts it on sale).
	_, err := db.PutSKU(ctx, flashsale.SKU{ID: sku, Total: 5, Price: 100, Buckets: 4, PerUserLimit: 1})
	require.NoError(t, err)
	st, err := c.Stock(ctx, sku)
	require.NoError(t, err)
	require.Equal(t, catalog.Stock{Units: catalog.Units{SKU: sku, Total: 5, DBAvailable: 5}, SoldOut: true, BucketCount: 4}, st)
	res, err := c.Restock(ctx, sku, "r0", 1)
	require.NoError(t, err)
	require.False(t, res.OnSale)
	require.True(t, res.Added)
	require.EqualValues(t, 6, res.Inventory.Total)

	_, err = c.Redis.Preheat(ctx, sku, 6, 4)
	require.NoError(t, err)
	st, err = c.Stock(ctx, sku)
	require.NoError(t, err)
	require.Equal(t, catalog.Stock{Units: catalog.Units{SKU: sku, Total: 6, Available: 6, DBAvailable: 6}, BucketCount: 4, OnSale: true}, st)

	// On sale: both stores get the units, once per request id.
	res, err = c.Restock(ctx, sku, "r1", 3)
	require.NoError(t, err)
	require.Equal(t, catalog.Restocked{SKU: sku, RestockID: "r1", Quantity: 3, Added: true, Inventory: res.Inventory, OnSale: true}, res)
	res, err = c.Restock(ctx, sku, "r1", 3)
	require.NoError(t, err)
	require.False(t, res.Added)
	_, err = c.Restock(ctx, sku, "r1", 4)
	require.Equal(t, flashsale.Invalid, code(err))
	require.Equal(t, "restock_id was already used with a different quantity", flashsale.ErrorMessage(err))
	st, err = c.Stock(ctx, sku)
	require.NoError(t, err)
	require.EqualValues(t, 9, st.Available)
	require.EqualValues(t, 9, st.DBAvailable)
	require.EqualValues(t, 9, st.Total)

	// Resize moves units between buckets, loses none, and MySQL keeps the
	// count for the next preheat.
	rs, err := c.Resize(ctx, sku, 8)
	require.NoError(t, err)
	require.Equal(t, catalog.Resized{SKU: sku, Buckets: 8, RedisAvailable: 9}, rs)
	st, err = c.Stock(ctx, sku)
	require.NoError(t, err)
	require.Equal(t, catalog.Stock{Units: catalog.Units{SKU: sku, Total: 9, Available: 9, DBAvailable: 9}, BucketCount: 8, OnSale: true}, st)
	inv, err := db.Inventory(ctx, sku)
	require.NoError(t, err)
	require.Equal(t, 8, inv.Buckets)

	// Refusals, before anything is touched.
	ghost := sku + "-ghost"
	for _, tt := range []struct {
		err  error
		want flashsale.Code
	}{
		{second(c.Restock(ctx, ghost, "r1", 1)), flashsale.UnknownSKU},
		{second(c.Resize(ctx, ghost, 2)), flashsale.UnknownSKU},
		{second(c.Stock(ctx, ghost)), flashsale.UnknownSKU},
		{second(c.Restock(ctx, sku, "r2", 0)), flashsale.Invalid},
		{second(c.Restock(ctx, sku, "r2", flashsale.MaxSKUTotal+1)), flashsale.Invalid},
		{second(c.Restock(ctx, sku, "a b", 1)), flashsale.Invalid},
		{second(c.Resize(ctx, sku, 0)), flashsale.Invalid},
		{second(c.Resize(ctx, sku, flashsale.MaxBuckets+1)), flashsale.Invalid},
		{second(c.Stock(ctx, "a}b")), flashsale.Invalid},
	} {
		require.Equal(t, tt.want, code(tt.err), "%v", tt.err)
	}
	_, err = c.Redis.Stock(ctx, ghost)
	require.Equal(t, flashsale.UnknownSKU, code(err), "an unknown SKU got no Redis keys")
	inv, err = db.Inventory(ctx, sku)
	require.NoError(t, err)
	require.EqualValues(t, 9, inv.Total)
	require.Equal(t, 8, inv.Buckets)
}

func second[T any](_ T, err error) error { return err }

// A restock spreads the SKU's units over bucket rows that mirror its Redis
// buckets (orderdb.Store.SplitStock, as a preheat does), and the stock
// view still reads the SKU's one truth: its row plus its bucket rows.
func TestRestockSpreadsOverBucketRows(t *testing.T) {
	ctx := context.Background()
	c, db := midSale(t)
	sku := "rows-" + testenv.UniqueID(t)
	_, err := db.PutSKU(ctx, flashsale.SKU{ID: sku, Total: 5, Price: 100, Buckets: 4, PerUserLimit: 1})
	require.NoError(t, err)
	_, err = c.Redis.Preheat(ctx, sku, 5, 4)
	require.NoError(t, err)
	_, err = c.Restock(ctx, sku, "r1", 3)
	require.NoError(t, err)

	var rows []struct {
		Bucket    int
		Available int64
	}
	require.NoError(t, db.DB().Raw(`SELECT bucket, available FROM inventory_buckets WHERE sku_id = ? ORDER BY bucket`, sku).Scan(&rows).Error)
	require.Len(t, rows, 4)
	var onRows int64
	for _, r := range rows {
		require.InDelta(t, 2, r.Available, 0, "8 units spread evenly over 4 rows")
		onRows += r.Available
	}
	require.EqualValues(t, 8, onRows)
	var onSKURow int64
	require.NoError(t, db.DB().Raw(`SELECT available FROM inventory WHERE sku_id = ?`, sku).Scan(&onSKURow).Error)
	require.Zero(t, onSKURow)
	st, err := c.Stock(ctx, sku)
	require.NoError(t, err)
	require.Equal(t, catalog.Stock{Units: catalog.Units{SKU: sku, Total: 8, Available: 8, DBAvailable: 8}, BucketCount: 4, OnSale: true}, st)
}
