package activities

import (
	"errors"
	"fmt"
	"net"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/activities/contract"
)

// The type strings are in recorded histories and in the retry policies of
// running orders: this pins them, and the list the retry policies carry.
func TestErrorTypesNeverChange(t *testing.T) {
	for code, typ := range map[flashsale.Code]string{
		flashsale.SoldOut:             "SoldOut",
		flashsale.UnknownSKU:          "UnknownSKU",
		flashsale.StockDrift:          "StockDrift",
		flashsale.AmountMismatch:      "AmountMismatch",
		flashsale.AlreadyPaid:         "OrderPaid",
		flashsale.OrderClosed:         "OrderClosed",
		flashsale.Invalid:             "InvalidRequest",
		flashsale.Permanent:           "InvalidRequest",
		flashsale.LimitExceeded:       "LimitExceeded",
		flashsale.TransactionConflict: "TransactionConflict",
		flashsale.PaymentReceived:     "PaymentReceived",
		flashsale.OrderIDConflict:     "OrderIDConflict",
		flashsale.AlreadyReleased:     "SoldOut",
		flashsale.SaleStateConflict:   "SaleStateConflict",
		flashsale.NoSale:              "NoSale",
		flashsale.HoldExtended:        "HoldExtended",
	} {
		require.Equal(t, typ, contract.TypeFor(code), code)
	}
	require.Empty(t, contract.TypeFor(flashsale.Internal), "an unknown failure stays retryable")
	require.Equal(t, []string{
		"SoldOut", "UnknownSKU", "StockDrift", "AmountMismatch", "OrderPaid", "OrderClosed",
		"InvalidRequest", "LimitExceeded", "TransactionConflict", "PaymentReceived", "OrderIDConflict",
		"SaleStateConflict", "NoSale", "HoldExtended",
	}, contract.NonRetryableErrorTypes)
}

func TestRefuseRoundTrip(t *testing.T) {
	store := fmt.Errorf("reserve: %w", flashsale.Errorf(flashsale.SoldOut, "sold out"))
	err := refuse("reserve 1001 for order o-1", store, contract.SoldOutDetails{SKU: "1001"})

	appErr, ok := errors.AsType[*temporal.ApplicationError](err)
	require.True(t, ok)
	require.True(t, appErr.NonRetryable())
	require.Equal(t, "SoldOut", appErr.Type())
	require.Equal(t, "reserve 1001 for order o-1", appErr.Message())
	require.ErrorIs(t, err, store, "the store's error is the cause")
	var d contract.SoldOutDetails
	require.NoError(t, appErr.Details(&d))
	require.Equal(t, "1001", d.SKU)

	code, ok := contract.CodeOf(fmt.Errorf("activity: %w", err))
	require.True(t, ok)
	require.Equal(t, flashsale.SoldOut, code)

	// One-way rows come back as the code their type names first.
	code, _ = contract.CodeOf(refuse("create order o-1", flashsale.Errorf(flashsale.Permanent, "check constraint")))
	require.Equal(t, flashsale.Invalid, code)

	_, ok = contract.CodeOf(errors.New("connection refused"))
	require.False(t, ok)
	_, ok = contract.CodeOf(temporal.NewApplicationError("other", "SomethingElse"))
	require.False(t, ok)
}

// A code with no type must not become a retryable error that hides it:
// it says so.
func TestRefuseWithoutATypeSaysSo(t *testing.T) {
	err := refuse("op", flashsale.Errorf(flashsale.Busy, "busy"))
	_, isApp := errors.AsType[*temporal.ApplicationError](err)
	require.False(t, isApp)
	require.ErrorContains(t, err, "has no activity error type")
}

// A store's Unavailable (Redis, MySQL or Temporal did not answer) is no
// business answer: it has no type in the table, and every activity's
// classification leaves it a retryable error, so Temporal retries it by
// the activity's policy until the dependency is back.
func TestUnavailableStaysRetryable(t *testing.T) {
	require.Empty(t, contract.TypeFor(flashsale.Unavailable))
	require.NotContains(t, contract.NonRetryableErrorTypes, string(flashsale.Unavailable))
	down := fmt.Errorf("reserve: %w: %w", &flashsale.Error{Code: flashsale.Unavailable, Message: "stock store unavailable"},
		&net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connect: connection refused")})
	for name, err := range map[string]error{
		"payment": paymentError("pay o-1", down),
		"stock":   classifyStockErr("observe sku", down),
	} {
		t.Run(name, func(t *testing.T) {
			require.Equal(t, flashsale.Unavailable, flashsale.ErrorCode(err))
			if appErr, ok := errors.AsType[*temporal.ApplicationError](err); ok {
				require.False(t, appErr.NonRetryable(), "%v", err)
				require.NotContains(t, contract.NonRetryableErrorTypes, appErr.Type())
			}
			_, known := contract.CodeOf(err)
			require.False(t, known, "not a business answer")
		})
	}
}
