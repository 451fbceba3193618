//go:build integration

package orderdb_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flashsale/flashsale"
)

// A SKU's payment window fixes pay_by from the moment the window starts;
// an order of several SKUs gets the shortest window; an order without
// WindowFrom (its own timeout) and a SKU without a window keep PayBy.
func TestPaymentWindowFixesPayBy(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	for id, w := range map[string]time.Duration{"w25h": 25 * time.Hour, "w2h": 2 * time.Hour, "wnone": 0} {
		_, err := s.PutSKU(ctx, flashsale.SKU{ID: id, Total: 10, Price: 100, Buckets: 1, PerUserLimit: 10,
			Terms: flashsale.Terms{PaymentWindow: flashsale.Duration(w)}})
		require.NoError(t, err)
		require.Equal(t, w, inventory(t, s, id).PaymentWindow.D())
	}
	from := time.Now().UTC().Truncate(time.Millisecond)
	place := func(id string, withWindow bool, items ...flashsale.Item) time.Time {
		t.Helper()
		no := newOrder(id, "u-"+id, items...)
		if withWindow {
			no.WindowFrom = from
		}
		o, err := s.CreateOrder(ctx, no)
		require.NoError(t, err)
		return o.PayBy
	}
	require.Equal(t, from.Add(25*time.Hour), place("o1", true, item("w25h", 1)))
	require.Equal(t, from.Add(2*time.Hour), place("o2", true, item("w25h", 1), item("w2h", 1), item("wnone", 1)))
	own := place("o3", false, item("w25h", 1))
	require.WithinDuration(t, time.Now().Add(15*time.Minute), own, time.Minute, "an order's own timeout stands")
	require.WithinDuration(t, time.Now().Add(15*time.Minute), place("o4", true, item("wnone", 1)), time.Minute)
	again, err := s.CreateOrder(ctx, newOrder("o1", "u-o1", item("w25h", 1)))
	require.NoError(t, err)
	require.Equal(t, from.Add(25*time.Hour), again.PayBy, "a retry returns the stored deadline")

	_, err = s.PutSKU(ctx, flashsale.SKU{ID: "wbad", Total: 1, Price: 1, Buckets: 1, PerUserLimit: 1,
		Terms: flashsale.Terms{PaymentWindow: flashsale.Duration(100 * time.Hour)}})
	require.Error(t, err, "the column's CHECK refuses a window Redis cannot outlive")
}
