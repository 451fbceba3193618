//go:build integration

package orderdb_test

import (
	"context"
	"sync"
	"testing"

	"github.com/flashsale/flashsale"

	"github.com/stretchr/testify/require"

	"github.com/flashsale/flashsale/internal/orderdb"
)

func TestRestock(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	putSKU(t, s, "sku", 2, 100)
	createOrder(t, s, "o1", item("sku", 2))

	res, err := s.Restock(ctx, "sku", 5, "req-1")
	require.NoError(t, err)
	require.True(t, res.Added)
	want := orderdb.Inventory{SKU: "sku", Total: 7, Available: 5, Frozen: 2, Price: 100, Buckets: 4, PerUserLimit: testUserLimit}
	require.Equal(t, want, res.Inventory)
	require.Equal(t, want, inventory(t, s, "sku"))

	// A repeat changes nothing and says so.
	res, err = s.Restock(ctx, "sku", 5, "req-1")
	require.NoError(t, err)
	require.False(t, res.Added)
	require.Equal(t, want, res.Inventory)
	require.Equal(t, int64(1), count(t, s, `SELECT COUNT(*) FROM inventory_journal WHERE sku_id = 'sku' AND type = 'RESTOCK'`))

	tests := []struct {
		name    string
		sku     string
		qty     int64
		req     string
		wantErr error
	}{
		{"same request, other quantity", "sku", 6, "req-1", &flashsale.Error{Code: flashsale.Invalid}},
		{"unknown sku", "nope", 1, "req-2", &flashsale.Error{Code: flashsale.UnknownSKU}},
		{"zero quantity", "sku", 0, "req-3", &flashsale.Error{Code: flashsale.Invalid}},
		{"negative quantity", "sku", -1, "req-4", &flashsale.Error{Code: flashsale.Invalid}},
		{"empty request id", "sku", 1, "", &flashsale.Error{Code: flashsale.Invalid}},
		{"overflow", "sku", 1<<63 - 1, "req-5", &flashsale.Error{Code: flashsale.Invalid}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := s.Restock(ctx, tt.sku, tt.qty, tt.req)
			require.ErrorIs(t, err, tt.wantErr)
			require.Equal(t, want, inventory(t, s, "sku"), "nothing changed")
		})
	}
	checkInvariants(t, s, "sku")
}

func TestRestockConcurrentRepeatsApplyOnce(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	putSKU(t, s, "sku", 0, 100)

	const n = 10
	added := make([]bool, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			var res orderdb.RestockResult
			res, errs[i] = s.Restock(ctx, "sku", 3, "same-request")
			added[i] = res.Added
		})
	}
	wg.Wait()
	applied := 0
	for i := range n {
		require.NoError(t, errs[i])
		if added[i] {
			applied++
		}
	}
	require.Equal(t, 1, applied)
	inv := inventory(t, s, "sku")
	require.Equal(t, int64(3), inv.Total)
	require.Equal(t, int64(3), inv.Available)
	checkInvariants(t, s, "sku")
}
