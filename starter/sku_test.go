//go:build integration

package main

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flashsale/flashsale/internal/catalog"
)

// stockOf runs starter stock and decodes its view.
func stockOf(t *testing.T, sku string) catalog.Stock {
	t.Helper()
	code, stdout, stderr := starter(t, "stock", "--sku", sku)
	require.Equal(t, 0, code, "stderr: %s", stderr)
	var st catalog.Stock
	require.NoError(t, json.Unmarshal(stdout, &st))
	return st
}

// refused runs a command that must fail and returns what it printed on
// stderr: one JSON object with the code and message.
func refused(t *testing.T, wantExit int, args ...string) errorOut {
	t.Helper()
	code, stdout, stderr := starter(t, args...)
	require.Equal(t, wantExit, code, "%v: stderr %s", args, stderr)
	require.Empty(t, stdout)
	var e errorOut
	require.NoError(t, json.Unmarshal(stderr, &e), "stderr: %s", stderr)
	require.NotEmpty(t, e.Message)
	return e
}

// TestRestockAndBucketsCommands: the operators' mid-sale commands reach the
// same use cases as the admin API, with the same refusals.
func TestRestockAndBucketsCommands(t *testing.T) {
	s := newCLIStack(t) // 10 units in 4 buckets, on sale
	require.Equal(t, catalog.Stock{Units: catalog.Units{SKU: s.sku, Total: 10, Available: 10, DBAvailable: 10}, BucketCount: 4, OnSale: true},
		stockOf(t, s.sku))

	code, stdout, stderr := starter(t, "restock", "--sku", s.sku, "--qty", "3", "--restock-id", "r1")
	require.Equal(t, 0, code, "stderr: %s", stderr)
	var res catalog.Restocked
	require.NoError(t, json.Unmarshal(stdout, &res))
	require.True(t, res.Added)
	require.True(t, res.OnSale)
	require.EqualValues(t, 13, res.Inventory.Total)
	require.EqualValues(t, 13, res.Inventory.Available)

	// The same request again adds nothing.
	code, stdout, stderr = starter(t, "restock", "--sku", s.sku, "--qty", "3", "--restock-id", "r1")
	require.Equal(t, 0, code, "stderr: %s", stderr)
	require.NoError(t, json.Unmarshal(stdout, &res))
	require.False(t, res.Added)
	require.Equal(t, catalog.Stock{Units: catalog.Units{SKU: s.sku, Total: 13, Available: 13, DBAvailable: 13}, BucketCount: 4, OnSale: true},
		stockOf(t, s.sku))

	// The restock id with another quantity is refused, with the words the
	// API shows.
	e := refused(t, 1, "restock", "--sku", s.sku, "--qty", "4", "--restock-id", "r1")
	require.EqualValues(t, "INVALID_REQUEST", e.Code)
	require.Equal(t, "restock_id was already used with a different quantity", e.Message)

	code, stdout, stderr = starter(t, "buckets", "--sku", s.sku, "--buckets", "8")
	require.Equal(t, 0, code, "stderr: %s", stderr)
	var rs catalog.Resized
	require.NoError(t, json.Unmarshal(stdout, &rs))
	require.Equal(t, catalog.Resized{SKU: s.sku, Buckets: 8, RedisAvailable: 13}, rs)
	require.Equal(t, catalog.Stock{Units: catalog.Units{SKU: s.sku, Total: 13, Available: 13, DBAvailable: 13}, BucketCount: 8, OnSale: true},
		stockOf(t, s.sku))
	inv, err := s.b.Orders.Inventory(t.Context(), s.sku)
	require.NoError(t, err)
	require.Equal(t, 8, inv.Buckets, "MySQL keeps the count for the next preheat")

	ghost := s.sku + "-ghost"
	require.EqualValues(t, "UNKNOWN_SKU", refused(t, 1, "restock", "--sku", ghost, "--qty", "1").Code)
	require.EqualValues(t, "UNKNOWN_SKU", refused(t, 1, "buckets", "--sku", ghost, "--buckets", "2").Code)
	require.EqualValues(t, "UNKNOWN_SKU", refused(t, 1, "stock", "--sku", ghost).Code)
}

// TestCommandRefusals: a command line the CLI cannot run exits 2 with
// USAGE; input that fails the house's validation exits 1 with its code,
// before any connection (the environment points nowhere).
func TestCommandRefusals(t *testing.T) {
	for _, k := range []string{"TEMPORAL_ADDRESS", "REDIS_ADDR"} {
		t.Setenv(k, "127.0.0.1:1")
	}
	t.Setenv("MYSQL_DSN", "root@tcp(127.0.0.1:1)/nothing")
	tests := []struct {
		args []string
		exit int
		code string
	}{
		{[]string{"restock", "--sku", "s"}, 2, "USAGE"},
		{[]string{"restock", "--sku", "s", "--qty", "-1"}, 2, "USAGE"},
		{[]string{"restock", "--qty", "1"}, 2, "USAGE"},
		{[]string{"restock", "--sku", "a b", "--qty", "1"}, 1, "INVALID_REQUEST"},
		{[]string{"restock", "--sku", "s", "--qty", "2000000000"}, 1, "INVALID_REQUEST"},
		{[]string{"buckets", "--sku", "s"}, 2, "USAGE"},
		{[]string{"buckets", "--sku", "s", "--buckets", "2000"}, 1, "INVALID_REQUEST"},
		{[]string{"buckets", "--sku", "s", "--buckets", "-1"}, 1, "INVALID_REQUEST"},
		// The reserved prefix of waitlist offers is refused at every door.
		{[]string{"order", "--user", "u", "--sku", "s", "--order-id", "wl-x"}, 1, "INVALID_REQUEST"},
		{[]string{"order", "--user", "u", "--sku", "s", "--client-order-id", "wl-x"}, 1, "INVALID_REQUEST"},
		{[]string{"order", "--user", "u", "--sku", "s", "--client-order-id", "a b"}, 1, "INVALID_REQUEST"},
		// One name for the order: from the buyer's key, or its own id.
		{[]string{"order", "--user", "u", "--sku", "s", "--client-order-id", "k", "--order-id", "o"}, 2, "USAGE"},
		{[]string{"order", "--user", "u", "--sku", "s", "--qty", "0"}, 1, "INVALID_REQUEST"},
		{[]string{"sku", "create", "--sku", "s", "--stock", "1", "--price", "1", "--buckets", "0"}, 1, "INVALID_REQUEST"},
		{[]string{"nope"}, 2, "USAGE"},
	}
	for _, tt := range tests {
		e := refused(t, tt.exit, tt.args...)
		require.EqualValues(t, tt.code, e.Code, "%v", tt.args)
	}
	e := refused(t, 1, "order", "--user", "u", "--sku", "s", "--order-id", "wl-x")
	require.Equal(t, "order ids starting with wl- are reserved for waitlist offers", e.Message)
	e = refused(t, 1, "order", "--user", "u", "--sku", "s", "--client-order-id", "wl-x")
	require.Equal(t, "client_order_id must not start with wl-, reserved for waitlist offers", e.Message)
}
