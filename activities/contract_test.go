package activities

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/internal/sale"
)

// The types the activities share with the stores are written into
// histories: a reservation, a sale's opening and a payment's status
// recorded by an older worker decode the same, and the other way round
// (arrival-expired.json holds the reservation below).
func TestContractTypesKeepTheirRecordedJSON(t *testing.T) {
	requireJSON := func(want string, v any) {
		t.Helper()
		got, err := json.Marshal(v)
		require.NoError(t, err)
		require.JSONEq(t, want, string(got))
	}
	requireJSON(`{"SKU":"a","Quantity":3,"Parts":[{"bucket":1,"quantity":1},{"bucket":5,"quantity":2}]}`,
		flashsale.Reservation{SKU: "a", Quantity: 3, Parts: []flashsale.Part{{Bucket: 1, Quantity: 1}, {Bucket: 5, Quantity: 2}}})
	requireJSON(`{"SKU":"b","Quantity":1,"Parts":null}`, flashsale.Reservation{SKU: "b", Quantity: 1})

	requireJSON(`{"entrants":3,"seed":"seed","state":"OPEN"}`, flashsale.OpenedSale{Entrants: 3, Seed: "seed", State: sale.Open})

	require.Equal(t, "CAPTURED", string(flashsale.PaymentCaptured))
	require.Equal(t, "REFUND_REQUIRED", string(flashsale.PaymentRefundRequired))
}
