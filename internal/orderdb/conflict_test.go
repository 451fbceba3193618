//go:build integration

package orderdb_test

import (
	"context"
	"testing"

	"github.com/flashsale/flashsale"

	"github.com/stretchr/testify/require"

	"github.com/flashsale/flashsale/internal/orderdb"
)

// A transaction captured for order A and then offered to order B (open) is
// A's money: B is told so, nothing is written for B, and B can still be paid
// with a transaction of its own.
func TestConfirmPaymentTransactionOfAnotherOrder(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	putSKU(t, s, "sku", 5, 700)
	a := createOrder(t, s, "a", item("sku", 1))
	b := createOrder(t, s, "b", item("sku", 1))
	_, err := s.ConfirmPayment(ctx, "a", "t1", a.Amount)
	require.NoError(t, err)
	before, err := s.Order(ctx, "b")
	require.NoError(t, err)
	invBefore := inventory(t, s, "sku")

	for range 2 { // a repeat gets the same answer
		_, err = s.ConfirmPayment(ctx, "b", "t1", b.Amount)
		require.ErrorIs(t, err, &flashsale.Error{Code: flashsale.TransactionConflict})
		var conflict *orderdb.TransactionConflictError
		require.ErrorAs(t, err, &conflict)
		require.Equal(t, orderdb.TransactionConflictError{TransactionID: "t1", OrderID: "b", RecordedFor: "a"}, *conflict)
		require.NotErrorIs(t, err, &flashsale.Error{Code: flashsale.Invalid})
		require.NotErrorIs(t, err, &flashsale.Error{Code: flashsale.Permanent})
	}

	after, err := s.Order(ctx, "b")
	require.NoError(t, err)
	require.Equal(t, before, after, "b unchanged")
	require.Equal(t, invBefore, inventory(t, s, "sku"), "no stock moved")
	require.Equal(t, int64(1), count(t, s, `SELECT COUNT(*) FROM payments WHERE transaction_id = 't1'`))
	require.Equal(t, int64(0), count(t, s, `SELECT COUNT(*) FROM payments WHERE order_id = 'b'`))

	res, err := s.ConfirmPayment(ctx, "b", "t2", b.Amount)
	require.NoError(t, err)
	require.Equal(t, flashsale.PaymentCaptured, res.Payment.Status)
	require.Equal(t, flashsale.StatusPaid, res.Order.Status)
	checkInvariants(t, s, "sku")
}

// A transaction captured for A and then sent to B after B closed: the late
// settle must not record or answer a refund for B, which would refund A's
// sale.
func TestRecordRefundTransactionOfAnotherOrder(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	putSKU(t, s, "sku", 5, 700)
	a := createOrder(t, s, "a", item("sku", 1))
	createOrder(t, s, "b", item("sku", 1))
	_, err := s.ConfirmPayment(ctx, "a", "t1", a.Amount)
	require.NoError(t, err)
	_, err = s.CloseOrder(ctx, "b", flashsale.StatusExpired, "PAYMENT_TIMEOUT")
	require.NoError(t, err)

	for range 2 {
		_, err = s.RecordRefund(ctx, orderdb.Payment{TransactionID: "t1", OrderID: "b", Amount: a.Amount, Reason: "ORDER_CLOSED"})
		require.ErrorIs(t, err, &flashsale.Error{Code: flashsale.TransactionConflict})
		var conflict *orderdb.TransactionConflictError
		require.ErrorAs(t, err, &conflict)
		require.Equal(t, "a", conflict.RecordedFor)
	}
	pays, err := s.Payments(ctx, "b")
	require.NoError(t, err)
	require.Empty(t, pays, "nothing stored for b")
	pays, err = s.Payments(ctx, "a")
	require.NoError(t, err)
	require.Len(t, pays, 1)
	require.Equal(t, flashsale.PaymentCaptured, pays[0].Status, "a's capture untouched")

	// The same through ConfirmPayment on the closed order.
	_, err = s.ConfirmPayment(ctx, "b", "t1", a.Amount)
	require.ErrorIs(t, err, &flashsale.Error{Code: flashsale.TransactionConflict})
	checkInvariants(t, s, "sku")
}
