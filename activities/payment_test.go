//go:build integration

package activities_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"gorm.io/gorm"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/activities/contract"
)

// createPending writes an order of one unit of sku (no Redis involved).
func (f *fixture) createPending(t *testing.T, orderID, sku string) contract.CreateOrderResult {
	t.Helper()
	res, err := f.acts.CreateOrder(context.Background(), contract.CreateOrderInput{
		Order: flashsale.Order{OrderID: orderID, UserID: "u-" + orderID, Items: []flashsale.Item{{SKU: sku, Quantity: 1}}},
	})
	require.NoError(t, err)
	return res
}

func nonRetryable(t *testing.T, err error, wantType string) *temporal.ApplicationError {
	t.Helper()
	var appErr *temporal.ApplicationError
	require.True(t, errors.As(err, &appErr), "want an application error, got %v", err)
	require.Equal(t, wantType, appErr.Type())
	require.True(t, appErr.NonRetryable())
	return appErr
}

// A transaction already captured for order A, offered to order B, is a
// non-retryable TransactionConflict naming A, both while B is open
// (ConfirmPayment) and after it closed (RecordRefund). Before, it was a
// plain error retried forever.
func TestPaymentOfAnotherOrdersTransactionIsAConflict(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	sku := f.sku(t, "conflict", 3, 3)
	a := f.prefix + "a"
	b := f.prefix + "b"
	created := f.createPending(t, a, sku)
	f.createPending(t, b, sku)
	_, err := f.acts.ConfirmPayment(ctx, contract.ConfirmPaymentInput{OrderID: a, TransactionID: "t1", Amount: created.Amount})
	require.NoError(t, err)

	_, err = f.acts.ConfirmPayment(ctx, contract.ConfirmPaymentInput{OrderID: b, TransactionID: "t1", Amount: created.Amount})
	appErr := nonRetryable(t, err, contract.TypeFor(flashsale.TransactionConflict))
	var d contract.TransactionConflictDetails
	require.NoError(t, appErr.Details(&d))
	require.Equal(t, contract.TransactionConflictDetails{TransactionID: "t1", RecordedFor: a}, d)
	require.Contains(t, contract.NonRetryableErrorTypes, contract.TypeFor(flashsale.TransactionConflict))

	_, err = f.acts.CloseOrder(ctx, contract.CloseOrderInput{OrderID: b, Status: flashsale.StatusExpired, Reason: "PAYMENT_TIMEOUT"})
	require.NoError(t, err)
	_, err = f.acts.RecordRefund(ctx, contract.RecordRefundInput{OrderID: b, TransactionID: "t1", Amount: created.Amount, Reason: "ORDER_CLOSED"})
	appErr = nonRetryable(t, err, contract.TypeFor(flashsale.TransactionConflict))
	require.NoError(t, appErr.Details(&d))
	require.Equal(t, a, d.RecordedFor)
	pays, err := f.orders.Payments(ctx, b)
	require.NoError(t, err)
	require.Empty(t, pays)
}

// RecordRefund reports what is stored, so a late settle of a transaction
// that did pay this order is not answered as a refund.
func TestRecordRefundReportsStoredStatus(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	sku := f.sku(t, "stored", 3, 3)
	paid := f.prefix + "paid"
	created := f.createPending(t, paid, sku)
	_, err := f.acts.ConfirmPayment(ctx, contract.ConfirmPaymentInput{OrderID: paid, TransactionID: "t-paid", Amount: created.Amount})
	require.NoError(t, err)

	res, err := f.acts.RecordRefund(ctx, contract.RecordRefundInput{OrderID: paid, TransactionID: "t-paid", Amount: created.Amount, Reason: "ALREADY_PAID"})
	require.NoError(t, err)
	require.Equal(t, contract.RecordRefundResult{PaymentStatus: flashsale.PaymentCaptured, OrderID: paid}, res)

	res, err = f.acts.RecordRefund(ctx, contract.RecordRefundInput{OrderID: paid, TransactionID: "t-second", Amount: created.Amount, Reason: "ALREADY_PAID"})
	require.NoError(t, err)
	require.Equal(t, contract.RecordRefundResult{PaymentStatus: flashsale.PaymentRefundRequired, OrderID: paid}, res)
}

// A database answer that no retry can change (here the inventory row breaks
// its balance CHECK) fails the payment non-retryably, instead of holding the
// order open forever; compensation of the same order keeps retrying,
// because its units must come back once the row is repaired.
func TestPermanentDatabaseErrorIsNotRetried(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	sku := f.sku(t, "broken", 3, 3)
	orderID := f.prefix + "o"
	created := f.createPending(t, orderID, sku)
	// Corrupt the row behind the CHECK constraints' back, as a bad manual
	// fix would; every later UPDATE of the row then violates the CHECK.
	require.NoError(t, f.orders.DB().Transaction(func(tx *gorm.DB) error {
		if err := tx.Exec("SET SESSION check_constraint_checks = 0").Error; err != nil {
			return err
		}
		if err := tx.Exec("UPDATE inventory SET total = total + 1 WHERE sku_id = ?", sku).Error; err != nil {
			return err
		}
		return tx.Exec("SET SESSION check_constraint_checks = 1").Error
	}))

	_, err := f.acts.ConfirmPayment(ctx, contract.ConfirmPaymentInput{OrderID: orderID, TransactionID: "t1", Amount: created.Amount})
	_ = nonRetryable(t, err, contract.TypeFor(flashsale.Invalid))
	pays, err := f.orders.Payments(ctx, orderID)
	require.NoError(t, err)
	require.Empty(t, pays, "the payment rolled back")

	_, err = f.acts.CloseOrder(ctx, contract.CloseOrderInput{OrderID: orderID, Status: flashsale.StatusExpired, Reason: "PAYMENT_TIMEOUT"})
	require.Equal(t, flashsale.Permanent, flashsale.ErrorCode(err))
	var appErr *temporal.ApplicationError
	require.False(t, errors.As(err, &appErr), "compensation stays retryable: %v", err)
}
