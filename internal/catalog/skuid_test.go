//go:build integration

package catalog_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/internal/catalog"
	"github.com/flashsale/flashsale/internal/inventory"
	"github.com/flashsale/flashsale/internal/orderdb"
	"github.com/flashsale/flashsale/internal/testenv"
	"github.com/flashsale/flashsale/workflows"
)

// A SKU id is inside its keys' hash tags, and "K:b1" is SKU K's bucket 1
// (issue 35): SKUs K and K:b1 can no longer both exist. The second is
// refused at the catalog's door before MySQL or Redis is touched, and no
// sale of it can start; K's keys are as they were.
func TestDefineRefusesASKUNamedLikeAnotherSKUsBucket(t *testing.T) {
	ctx := context.Background()
	orders, err := orderdb.Open(ctx, testenv.MySQLDSN(t))
	require.NoError(t, err)
	t.Cleanup(func() { _ = orders.Close() })
	rdb := testenv.Redis(t)
	c := catalog.Catalog{DB: orders, Redis: inventory.New(rdb, inventory.Options{})}
	sku := "ids-" + testenv.UniqueID(t)
	_, err = c.Define(ctx, flashsale.SKU{ID: sku, Total: 8, Price: 100, Buckets: 4, PerUserLimit: 1})
	require.NoError(t, err)
	keys := func() []string {
		ks, err := rdb.Keys(ctx, "fs:{sku:"+sku+"*").Result()
		require.NoError(t, err)
		return ks
	}
	before := keys()
	require.Contains(t, before, "fs:{sku:"+sku+":b1}:stock")

	for _, bad := range []string{sku + ":b1", sku + "*", sku + "?", sku + "[b]", sku + "{x}", sku + ".1", sku + "@b"} {
		_, err = c.Define(ctx, flashsale.SKU{ID: bad, Total: 8, Price: 100, Buckets: 4, PerUserLimit: 1})
		require.Equal(t, flashsale.Invalid, flashsale.ErrorCode(err), bad)
		_, err = orders.Inventory(ctx, bad)
		require.Equal(t, flashsale.UnknownSKU, flashsale.ErrorCode(err), "%s is not in MySQL", bad)
		_, err = catalog.Sales{DB: orders}.Start(ctx, workflows.SaleInput{SKU: bad, OpensAt: time.Now().Add(time.Hour)})
		require.Equal(t, flashsale.Invalid, flashsale.ErrorCode(err), "no sale of %s", bad)
	}
	require.ElementsMatch(t, before, keys(), "K's keys are untouched")
}
