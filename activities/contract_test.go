package activities

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/activities/contract"
	"github.com/flashsale/flashsale/internal/inventory"
	"github.com/flashsale/flashsale/internal/sale"
)

// The contract's copies of store types are written into histories with the
// JSON the store's own types had before the contract existed: a reservation
// recorded by an older worker decodes the same, and the other way round.
func TestContractCopiesOfStoreTypes(t *testing.T) {
	for _, r := range []inventory.Reservation{
		{SKU: "a", Quantity: 3, Parts: []inventory.Part{{Bucket: 1, Quantity: 1}, {Bucket: 5, Quantity: 2}}},
		{SKU: "b", Quantity: 1},
	} {
		want, err := json.Marshal(r)
		require.NoError(t, err)
		got, err := json.Marshal(reservation(r))
		require.NoError(t, err)
		require.JSONEq(t, string(want), string(got))
	}

	opened := sale.Opened{Entrants: 3, Seed: "seed", State: sale.Open}
	want, err := json.Marshal(opened)
	require.NoError(t, err)
	got, err := json.Marshal(contract.OpenedSale{Entrants: opened.Entrants, Seed: opened.Seed, State: opened.State})
	require.NoError(t, err)
	require.JSONEq(t, string(want), string(got))

	require.Equal(t, string(flashsale.PaymentCaptured), string(flashsale.PaymentCaptured))
	require.Equal(t, string(flashsale.PaymentRefundRequired), string(flashsale.PaymentRefundRequired))
}
