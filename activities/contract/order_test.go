package contract_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/activities/contract"
)

// CreateOrder is told, per SKU, the bucket that gave the most units; a
// degraded reservation names none.
func TestBucketsOf(t *testing.T) {
	require.Nil(t, contract.BucketsOf(contract.ReserveStockResult{Degraded: true}))
	require.Equal(t, map[string]int{"a": 5, "b": 2}, contract.BucketsOf(contract.ReserveStockResult{
		Reservations: []flashsale.Reservation{
			{SKU: "a", Quantity: 3, Parts: []flashsale.Part{{Bucket: 1, Quantity: 1}, {Bucket: 5, Quantity: 2}}},
			{SKU: "b", Quantity: 2, Parts: []flashsale.Part{{Bucket: 2, Quantity: 1}, {Bucket: 3, Quantity: 1}}},
		},
	}))
}
