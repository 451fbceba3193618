//go:build integration

package orderdb_test

import (
	"context"
	"strings"
	"testing"

	"github.com/flashsale/flashsale"

	"github.com/stretchr/testify/require"

	"github.com/flashsale/flashsale/internal/orderdb"
)

func TestPutSKUValidation(t *testing.T) {
	s := newStore(t)
	valid := flashsale.SKU{ID: "sku", Total: 10, Price: 100, Buckets: 1, PerUserLimit: 1}
	cases := []struct {
		name   string
		mutate func(*flashsale.SKU)
	}{
		{"empty id", func(k *flashsale.SKU) { k.ID = "" }},
		{"id too long", func(k *flashsale.SKU) { k.ID = strings.Repeat("x", 65) }},
		{"id trailing space", func(k *flashsale.SKU) { k.ID = "sku " }},
		{"negative total", func(k *flashsale.SKU) { k.Total = -1 }},
		{"negative price", func(k *flashsale.SKU) { k.Price = -1 }},
		{"zero buckets", func(k *flashsale.SKU) { k.Buckets = 0 }},
		{"too many buckets", func(k *flashsale.SKU) { k.Buckets = 1025 }},
		{"zero limit", func(k *flashsale.SKU) { k.PerUserLimit = 0 }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			k := valid
			tc.mutate(&k)
			_, err := s.PutSKU(context.Background(), k)
			require.ErrorIs(t, err, &flashsale.Error{Code: flashsale.Invalid})
		})
	}
	require.Zero(t, count(t, s, `SELECT COUNT(*) FROM inventory`))

	// Boundaries are accepted.
	for _, k := range []flashsale.SKU{
		{ID: strings.Repeat("x", 64), Total: 0, Price: 0, Buckets: 1024, PerUserLimit: 1},
		{ID: "b1", Total: 1, Price: 1, Buckets: 1, PerUserLimit: 99},
	} {
		_, err := s.PutSKU(context.Background(), k)
		require.NoError(t, err, k.ID)
	}
}

func TestPutSKUCreateAndReset(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)

	inv, err := s.PutSKU(ctx, flashsale.SKU{ID: "sku", Total: 10, Price: 250, Buckets: 8, PerUserLimit: 3})
	require.NoError(t, err)
	want := orderdb.Inventory{SKU: "sku", Total: 10, Available: 10, Price: 250, Buckets: 8, PerUserLimit: 3}
	require.Equal(t, want, inv)
	require.Equal(t, want, inventory(t, s, "sku"))

	_, err = s.Inventory(ctx, "nope")
	require.ErrorIs(t, err, &flashsale.Error{Code: flashsale.UnknownSKU})

	// Sell 3, expire 2: frozen back to 0, so a reset is allowed.
	paid := createOrder(t, s, "paid", item("sku", 3))
	_, err = s.ConfirmPayment(ctx, "paid", "txn-paid", paid.Amount)
	require.NoError(t, err)
	createOrder(t, s, "expired", item("sku", 2))
	_, err = s.CloseOrder(ctx, "expired", flashsale.StatusExpired, "timeout")
	require.NoError(t, err)
	require.Equal(t, orderdb.Inventory{SKU: "sku", Total: 10, Available: 7, Sold: 3, Price: 250, Buckets: 8, PerUserLimit: 3},
		inventory(t, s, "sku"))

	inv, err = s.PutSKU(ctx, flashsale.SKU{ID: "sku", Total: 20, Price: 199, Buckets: 16, PerUserLimit: 1})
	require.NoError(t, err)
	want = orderdb.Inventory{SKU: "sku", Total: 20, Available: 20, Price: 199, Buckets: 16, PerUserLimit: 1}
	require.Equal(t, want, inv)
	require.Equal(t, want, inventory(t, s, "sku"))

	// Every reset is journaled and the journal still replays to the row.
	require.Equal(t, int64(2), count(t, s, `SELECT COUNT(*) FROM inventory_journal WHERE sku_id = 'sku' AND type = 'RESET'`))
	require.Equal(t, int64(20), count(t, s, `SELECT SUM(delta_available) FROM inventory_journal WHERE sku_id = 'sku'`))
	require.Equal(t, int64(0), count(t, s, `SELECT SUM(delta_sold) FROM inventory_journal WHERE sku_id = 'sku'`))
	require.Equal(t, int64(0), count(t, s, `SELECT SUM(delta_frozen) FROM inventory_journal WHERE sku_id = 'sku'`))

	// A paid order keeps the price it was sold at.
	o, err := s.Order(ctx, "paid")
	require.NoError(t, err)
	require.Equal(t, int64(250), o.Items[0].UnitPrice)
	require.Equal(t, int64(750), o.Amount)
}

func TestPutSKURefusesWhileReserved(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	putSKU(t, s, "sku", 10, 100)
	createOrder(t, s, "o1", item("sku", 4))
	before := inventory(t, s, "sku")

	_, err := s.PutSKU(ctx, flashsale.SKU{ID: "sku", Total: 100, Price: 1, Buckets: 1, PerUserLimit: 1})
	require.ErrorIs(t, err, &flashsale.Error{Code: flashsale.SKUInUse})
	require.Equal(t, before, inventory(t, s, "sku"), "refused reset changes nothing")
	require.Equal(t, int64(1), count(t, s, `SELECT COUNT(*) FROM inventory_journal WHERE sku_id = 'sku' AND type = 'RESET'`))

	// Once the reservation is released the reset goes through.
	_, err = s.CloseOrder(ctx, "o1", flashsale.StatusCancelled, "user cancelled")
	require.NoError(t, err)
	_, err = s.PutSKU(ctx, flashsale.SKU{ID: "sku", Total: 100, Price: 1, Buckets: 1, PerUserLimit: 1})
	require.NoError(t, err)
	require.Equal(t, int64(100), inventory(t, s, "sku").Available)
}
