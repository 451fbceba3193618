package app

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/activities/contract"
)

func TestOrderStatusOf(t *testing.T) {
	soldOut := temporal.NewNonRetryableApplicationError("gone", contract.TypeFor(flashsale.SoldOut), nil)
	limit := temporal.NewNonRetryableApplicationError("limit", contract.TypeFor(flashsale.LimitExceeded), nil)
	retryable := temporal.NewApplicationError("later", contract.TypeFor(flashsale.SoldOut))
	tests := []struct {
		name string
		act  string
		args []any
		res  any
		err  error
		want flashsale.Status
	}{
		{"reserve sold out", "ReserveStock", nil, nil, soldOut, flashsale.StatusRejected},
		{"create over the limit", "CreateOrder", nil, nil, limit, flashsale.StatusRejected},
		{"a retryable failure moves nothing", "CreateOrder", nil, nil, retryable, ""},
		{"any other error moves nothing", "CreateOrder", nil, nil, errors.New("mysql down"), ""},
		{"reserved units are not yet an order", "ReserveStock", nil, contract.ReserveStockResult{}, nil, ""},
		{"created", "CreateOrder", nil, contract.CreateOrderResult{}, nil, flashsale.StatusPendingPayment},
		{"paid", "ConfirmPayment", nil, contract.ConfirmPaymentResult{OrderStatus: flashsale.StatusPaid}, nil, flashsale.StatusPaid},
		{"a repeated payment counts once", "ConfirmPayment", nil, contract.ConfirmPaymentResult{OrderStatus: flashsale.StatusPaid, Duplicate: true}, nil, ""},
		{"late money on a closed order", "ConfirmPayment", nil, contract.ConfirmPaymentResult{OrderStatus: flashsale.StatusExpired}, nil, ""},
		{"expired", "CloseOrder", []any{contract.CloseOrderInput{Status: flashsale.StatusExpired}}, contract.CloseOrderResult{}, nil, flashsale.StatusExpired},
		{"cancelled", "CloseOrder", []any{contract.CloseOrderInput{Status: flashsale.StatusCancelled}}, contract.CloseOrderResult{}, nil, flashsale.StatusCancelled},
		{"an abandoned order was never pending", "CloseOrder", []any{contract.CloseOrderInput{Status: flashsale.StatusCancelled, Abandon: true}}, contract.CloseOrderResult{}, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, orderStatusOf(tt.act, tt.args, tt.res, tt.err))
		})
	}
}

func TestCorrectionOf(t *testing.T) {
	kind, units := correctionOf(contract.CorrectStockResult{Claimed: true, Applied: -3}, nil)
	require.Equal(t, "correct", kind)
	require.Equal(t, int64(3), units)
	kind, _ = correctionOf(contract.CorrectStockResult{Claimed: false, Applied: 0}, nil)
	require.Empty(t, kind, "a correction another run made first")
	kind, _ = correctionOf(contract.RestoreStockResult{Restored: true}, nil)
	require.Equal(t, "restore", kind)
	kind, _ = correctionOf(contract.RestoreStockResult{Restored: true}, errors.New("failed"))
	require.Empty(t, kind)
}
