//go:build integration

package activities_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/activities/contract"
	"github.com/flashsale/flashsale/internal/orderdb"
)

// activityEnv runs f's activities as a worker would (heartbeats included).
func activityEnv(f *fixture) *testsuite.TestActivityEnvironment {
	var ts testsuite.WorkflowTestSuite
	env := ts.NewTestActivityEnvironment()
	env.RegisterActivity(f.acts)
	return env
}

// The end's removal of a sale's keys removes them all once; a retry
// removes nothing more, and a retry after the SKU went on sale again (a
// preheat clears the end's mark) leaves the new sale's keys alone.
func TestRemoveSaleKeysRemovesNothingTwice(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	sku := f.sku(t, "end", 5, 5)
	env := activityEnv(f)

	v, err := env.ExecuteActivity(f.acts.EndSale, contract.SaleRequest{SKU: sku})
	require.NoError(t, err)
	var ended contract.EndedSale
	require.NoError(t, v.Get(&ended))
	remove := func() contract.RemovedSaleKeys {
		t.Helper()
		v, err := env.ExecuteActivity(f.acts.RemoveSaleKeys, contract.RemoveSaleKeysInput{SKU: sku, EndedAt: ended.EndedAt})
		require.NoError(t, err)
		var r contract.RemovedSaleKeys
		require.NoError(t, v.Get(&r))
		return r
	}
	first := remove()
	require.Positive(t, first.Removed)
	require.False(t, first.Reopened)
	_, err = f.stock.Stock(ctx, sku)
	require.Equal(t, flashsale.UnknownSKU, flashsale.ErrorCode(err))
	require.Zero(t, remove().Removed, "a retry finds nothing left")

	require.NoError(t, f.orders.ReopenSale(ctx, sku))
	_, err = f.stock.Preheat(ctx, sku, 5, 4)
	require.NoError(t, err)
	late := remove()
	require.True(t, late.Reopened)
	require.Zero(t, late.Removed, "the new sale's keys are not the ended sale's")
	require.EqualValues(t, 5, f.redisAvailable(t, sku))
}

// A void's refunds: the paid order is refunded once, its unit back in MySQL
// and in Redis; a retry after the refund (a crash before Redis) gives the
// unit back to Redis once, not twice.
func TestRefundSaleOrders(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	sku := f.sku(t, "refund", 5, 5)
	since := time.Now().Add(-time.Second)
	res, err := f.stock.Reserve(ctx, f.prefix+"o1", sku, 1)
	require.NoError(t, err)
	require.EqualValues(t, 1, res.Quantity)
	_, err = f.orders.CreateOrder(ctx, orderdb.NewOrder{
		Order: flashsale.Order{OrderID: f.prefix + "o1", UserID: "u1", Items: []flashsale.Item{{SKU: sku, Quantity: 1}}},
		PayBy: time.Now().Add(time.Minute),
	})
	require.NoError(t, err)
	_, err = f.orders.ConfirmPayment(ctx, f.prefix+"o1", "t1", 1000)
	require.NoError(t, err)
	require.EqualValues(t, 4, f.redisAvailable(t, sku))

	env := activityEnv(f)
	refund := func() contract.RefundedOrders {
		t.Helper()
		v, err := env.ExecuteActivity(f.acts.RefundSaleOrders, contract.RefundSaleInput{SKU: sku, Since: since, Reason: "sale voided"})
		require.NoError(t, err)
		var r contract.RefundedOrders
		require.NoError(t, v.Get(&r))
		return r
	}
	require.Equal(t, 1, refund().Refunded)
	require.EqualValues(t, 5, f.redisAvailable(t, sku))
	require.Zero(t, refund().Refunded, "once")
	require.EqualValues(t, 5, f.redisAvailable(t, sku), "the unit came back to Redis once")
	inv, err := f.orders.Inventory(ctx, sku)
	require.NoError(t, err)
	require.EqualValues(t, 5, inv.Available)
	o, err := f.orders.Order(ctx, f.prefix+"o1")
	require.NoError(t, err)
	require.Equal(t, flashsale.StatusCancelled, o.Status)
	require.Equal(t, flashsale.PaymentRefundRequired, o.Payments[0].Status)
}
