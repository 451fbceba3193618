//go:build integration

package orderdb_test

import (
	"context"
	"testing"
	"time"

	"github.com/flashsale/flashsale"

	"github.com/stretchr/testify/require"

	"github.com/flashsale/flashsale/internal/orderdb"
)

// A payment our door received by the deadline, which nothing has answered
// yet, keeps CloseOrder from closing the order: the buyer paid in time.
// Once the payment is answered (captured or recorded for refund), or when
// it came after the deadline, the order closes as before.
func TestCloseOrderRespectsReceipts(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	putSKU(t, s, "r", 10, 100)

	o := createOrder(t, s, "in-time", item("r", 1))
	receipt := orderdb.Receipt{TransactionID: "tx-in-time", OrderID: "in-time", Amount: 100, ReceivedAt: o.PayBy.Add(-time.Second)}
	require.NoError(t, s.RecordReceipt(ctx, receipt))
	// The provider's retry, later: the first arrival time stays.
	require.NoError(t, s.RecordReceipt(ctx, orderdb.Receipt{TransactionID: "tx-in-time", OrderID: "in-time", Amount: 100, ReceivedAt: o.PayBy.Add(time.Minute)}))

	_, err := s.CloseOrder(ctx, "in-time", flashsale.StatusExpired, "pay-by passed")
	var received *orderdb.PaymentReceivedError
	require.ErrorAs(t, err, &received)
	require.ErrorIs(t, err, &flashsale.Error{Code: flashsale.PaymentReceived})
	require.Equal(t, "tx-in-time", received.Receipt.TransactionID)
	require.Equal(t, int64(100), received.Receipt.Amount)
	require.True(t, received.Receipt.ReceivedAt.Equal(o.PayBy.Add(-time.Second)), "%v", received.Receipt.ReceivedAt)
	inv := inventory(t, s, "r")
	require.Equal(t, []int64{9, 1, 0}, []int64{inv.Available, inv.Frozen, inv.Sold}, "nothing released")

	// Ignoring receipts (the payment could not be applied by its bound)
	// closes it; so does an answered receipt, checked on a second order.
	_, err = s.CloseOrderIgnoringReceipts(ctx, "in-time", flashsale.StatusExpired, "pay-by passed")
	require.NoError(t, err)

	o2 := createOrder(t, s, "answered", item("r", 1))
	require.NoError(t, s.RecordReceipt(ctx, orderdb.Receipt{TransactionID: "tx-answered", OrderID: "answered", Amount: 1, ReceivedAt: o2.PayBy.Add(-time.Second)}))
	_, err = s.RecordRefund(ctx, orderdb.Payment{TransactionID: "tx-answered", OrderID: "answered", Amount: 1,
		Status: flashsale.PaymentRefundRequired, Reason: "AMOUNT_MISMATCH"})
	require.NoError(t, err)
	_, err = s.CloseOrder(ctx, "answered", flashsale.StatusExpired, "pay-by passed")
	require.NoError(t, err)

	o3 := createOrder(t, s, "late", item("r", 1))
	require.NoError(t, s.RecordReceipt(ctx, orderdb.Receipt{TransactionID: "tx-late", OrderID: "late", Amount: 100, ReceivedAt: o3.PayBy.Add(time.Millisecond)}))
	_, err = s.CloseOrder(ctx, "late", flashsale.StatusCancelled, "user")
	require.NoError(t, err)

	inv = inventory(t, s, "r")
	require.Equal(t, []int64{10, 0, 0}, []int64{inv.Available, inv.Frozen, inv.Sold})

	require.ErrorIs(t, s.RecordReceipt(ctx, orderdb.Receipt{TransactionID: "", OrderID: "x", Amount: 1}), &flashsale.Error{Code: flashsale.Invalid})
	require.ErrorIs(t, s.RecordReceipt(ctx, orderdb.Receipt{TransactionID: "t", OrderID: "x", Amount: 0}), &flashsale.Error{Code: flashsale.Invalid})
}
