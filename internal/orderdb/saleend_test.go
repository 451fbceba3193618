//go:build integration

package orderdb_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/internal/orderdb"
	"github.com/flashsale/flashsale/internal/testenv"
)

// A void's refund of a paid order: CANCELLED, its captured money recorded
// for refund, its units from sold back to available (on the bucket row they
// were sold from) and the buyer's units back under the limit, once however
// often it is asked; unpaid and unknown orders are not refunded.
func TestRefundOrder(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	sku := "refund-" + testenv.UniqueID(t)
	since := time.Now().Add(-time.Second)
	inv, err := s.PutSKU(ctx, flashsale.SKU{ID: sku, Total: 10, Price: 100, Buckets: 4, PerUserLimit: 1})
	require.NoError(t, err)
	_, err = s.SplitStock(ctx, sku, inv.Buckets)
	require.NoError(t, err)

	paid, err := s.CreateOrder(ctx, newOrder(sku+"-paid", "alice", item(sku, 1)))
	require.NoError(t, err)
	_, err = s.ConfirmPayment(ctx, paid.OrderID, "t-"+paid.OrderID, 100)
	require.NoError(t, err)
	pending := createOrder(t, s, sku+"-pending", item(sku, 1))
	cancelled := createOrder(t, s, sku+"-cancelled", item(sku, 1))
	_, err = s.CloseOrder(ctx, cancelled.OrderID, flashsale.StatusCancelled, "buyer")
	require.NoError(t, err)

	ids, err := s.PaidOrders(ctx, sku, since, "", 10)
	require.NoError(t, err)
	require.Equal(t, []string{paid.OrderID}, ids)

	o, refunded, err := s.RefundOrder(ctx, paid.OrderID, "sale voided")
	require.NoError(t, err)
	require.True(t, refunded)
	require.Equal(t, flashsale.StatusCancelled, o.Status)
	require.Len(t, o.Payments, 1)
	require.Equal(t, flashsale.PaymentRefundRequired, o.Payments[0].Status)
	_, again, err := s.RefundOrder(ctx, paid.OrderID, "sale voided")
	require.NoError(t, err)
	require.False(t, again, "once")
	_, refunded, err = s.RefundOrder(ctx, cancelled.OrderID, "sale voided")
	require.NoError(t, err)
	require.False(t, refunded, "never paid: nothing to refund")
	_, _, err = s.RefundOrder(ctx, pending.OrderID, "sale voided")
	require.Equal(t, flashsale.Invalid, flashsale.ErrorCode(err), "an unpaid order is cancelled, not refunded")
	_, _, err = s.RefundOrder(ctx, sku+"-nobody", "sale voided")
	require.Equal(t, flashsale.OrderNotFound, flashsale.ErrorCode(err))

	after := inventory(t, s, sku)
	require.EqualValues(t, 9, after.Available, "the refunded unit is back")
	require.EqualValues(t, 1, after.Frozen)
	require.Zero(t, after.Sold)
	checkInvariants(t, s, sku)
	ids, err = s.RefundedOrders(ctx, sku, since, "", 10)
	require.NoError(t, err)
	require.Equal(t, []string{paid.OrderID}, ids)
	_, err = s.CreateOrder(ctx, newOrder(sku+"-again", "alice", item(sku, 1)))
	require.NoError(t, err, "alice's unit left the per-user limit with the refund")

	l, err := s.SaleLedger(ctx, sku, since)
	require.NoError(t, err)
	require.EqualValues(t, 1, l.Refunded)
	require.EqualValues(t, 1, l.Refunds)
	require.EqualValues(t, 100, l.RefundAmount)
	require.Zero(t, l.Revenue)
	require.EqualValues(t, 2, l.Orders[flashsale.StatusCancelled])
	require.EqualValues(t, 2, l.Orders[flashsale.StatusPendingPayment])
	late, err := s.SaleLedger(ctx, sku, time.Now().Add(time.Hour))
	require.NoError(t, err)
	require.Empty(t, late.Orders, "orders before the sale are not its orders")
}

// A sale's end is marked once and refuses every order, even one MySQL alone
// decides, until a preheat reopens it; a PUT starts a new sale.
func TestEndSale(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	sku := "ended-" + testenv.UniqueID(t)
	putSKU(t, s, sku, 5, 100)
	at, err := s.SaleEndedAt(ctx, sku)
	require.NoError(t, err)
	require.True(t, at.IsZero())

	ended, err := s.EndSale(ctx, sku)
	require.NoError(t, err)
	require.False(t, ended.IsZero())
	time.Sleep(5 * time.Millisecond)
	again, err := s.EndSale(ctx, sku)
	require.NoError(t, err)
	require.True(t, again.Equal(ended), "the first end is kept: %s, %s", ended, again)
	require.NotNil(t, inventory(t, s, sku).SaleEndedAt)
	_, err = s.CreateOrder(ctx, orderdb.NewOrder{
		Order:    flashsale.Order{OrderID: sku + "-o", UserID: "u", Items: []flashsale.Item{item(sku, 1)}},
		PayBy:    time.Now().Add(time.Minute),
		Degraded: true,
	})
	require.Equal(t, flashsale.SoldOut, flashsale.ErrorCode(err), "nothing is sold after the end")

	require.NoError(t, s.ReopenSale(ctx, sku))
	require.Nil(t, inventory(t, s, sku).SaleEndedAt)
	createOrder(t, s, sku+"-o2", item(sku, 1))
	_, err = s.EndSale(ctx, sku)
	require.NoError(t, err)
	_, err = s.CloseOrder(ctx, sku+"-o2", flashsale.StatusCancelled, "test")
	require.NoError(t, err)
	putSKU(t, s, sku, 5, 100)
	require.Nil(t, inventory(t, s, sku).SaleEndedAt, "a PUT starts another sale")
	_, err = s.EndSale(ctx, "nope-"+sku)
	require.Equal(t, flashsale.UnknownSKU, flashsale.ErrorCode(err))
}
