//go:build integration

package activities_test

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/activities"
	"github.com/flashsale/flashsale/activities/contract"
	"github.com/flashsale/flashsale/internal/inventory"
	"github.com/flashsale/flashsale/internal/orderdb"
	"github.com/flashsale/flashsale/internal/testenv"
)

// These tests run the activities against the real Redis and MariaDB: the
// behaviour under test (atomic Lua, CHECK constraints, transactions) lives
// in those servers.

type fixture struct {
	acts   *activities.Activities
	stock  *inventory.Store
	orders *orderdb.Store
	prefix string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx := context.Background()
	orders, err := orderdb.Open(ctx, testenv.MySQLDSN(t))
	require.NoError(t, err)
	t.Cleanup(func() { _ = orders.Close() })
	stock := inventory.New(testenv.Redis(t), inventory.Options{})
	now := time.Date(2026, 11, 11, 0, 0, 0, 0, time.UTC)
	return &fixture{
		acts: &activities.Activities{Stock: stock, Orders: orders, PaymentTimeout: 15 * time.Minute,
			Now: func() time.Time { return now }},
		stock: stock, orders: orders, prefix: "act-" + testenv.UniqueID(t) + "-",
	}
}

// sku creates a SKU with dbStock units in MySQL and redisStock in Redis;
// different numbers simulate drift.
func (f *fixture) sku(t *testing.T, name string, dbStock, redisStock int64) string {
	t.Helper()
	id := f.prefix + name
	_, err := f.orders.PutSKU(context.Background(), flashsale.SKU{ID: id, Total: dbStock, Price: 1000, Buckets: 4, PerUserLimit: 10})
	require.NoError(t, err)
	_, err = f.stock.Preheat(context.Background(), id, redisStock, 4)
	require.NoError(t, err)
	return id
}

func (f *fixture) redisAvailable(t *testing.T, sku string) int64 {
	t.Helper()
	st, err := f.stock.Stock(context.Background(), sku)
	require.NoError(t, err)
	return st.Available
}

func appErrType(err error) string {
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		return appErr.Type()
	}
	return ""
}

func TestReserveStockIsAllOrNothing(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	plenty := f.sku(t, "plenty", 5, 5)
	scarce := f.sku(t, "scarce", 1, 1)

	tests := []struct {
		name       string
		items      []flashsale.Item
		wantErr    string
		wantRedis  map[string]int64
		retryTwice bool
	}{
		{
			name:      "second item short: first item given back",
			items:     []flashsale.Item{{SKU: plenty, Quantity: 2}, {SKU: scarce, Quantity: 2}},
			wantErr:   contract.TypeFor(flashsale.SoldOut),
			wantRedis: map[string]int64{plenty: 5, scarce: 1},
		},
		{
			name:      "unknown sku: first item given back",
			items:     []flashsale.Item{{SKU: plenty, Quantity: 1}, {SKU: f.prefix + "nope", Quantity: 1}},
			wantErr:   contract.TypeFor(flashsale.UnknownSKU),
			wantRedis: map[string]int64{plenty: 5},
		},
		{
			name:       "both available, retried: taken once",
			items:      []flashsale.Item{{SKU: plenty, Quantity: 2}, {SKU: scarce, Quantity: 1}},
			wantRedis:  map[string]int64{plenty: 3, scarce: 0},
			retryTwice: true,
		},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := contract.ReserveStockInput{OrderID: f.prefix + "o" + string(rune('a'+i)), Items: tt.items}
			res, err := f.acts.ReserveStock(ctx, in)
			if tt.retryTwice {
				require.NoError(t, err)
				again, err := f.acts.ReserveStock(ctx, in)
				require.NoError(t, err)
				require.Equal(t, res, again)
			}
			if tt.wantErr != "" {
				require.Equal(t, tt.wantErr, appErrType(err), "err: %v", err)
			}
			for sku, want := range tt.wantRedis {
				require.Equal(t, want, f.redisAvailable(t, sku), sku)
			}
		})
	}
}

func TestCreateOrderIdempotentAndPriced(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	sku := f.sku(t, "a", 3, 3)
	in := contract.CreateOrderInput{Order: flashsale.Order{OrderID: f.prefix + "o1", UserID: "u1",
		Items: []flashsale.Item{{SKU: sku, Quantity: 2}}}}

	first, err := f.acts.CreateOrder(ctx, in)
	require.NoError(t, err)
	require.Equal(t, contract.CreateOrderResult{Amount: 2000, PayBy: time.Date(2026, 11, 11, 0, 15, 0, 0, time.UTC)}, first)
	f.acts.Now = func() time.Time { return time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC) }
	again, err := f.acts.CreateOrder(ctx, in)
	require.NoError(t, err)
	require.Equal(t, first, again, "a retry must not move the deadline")

	inv, err := f.orders.Inventory(ctx, sku)
	require.NoError(t, err)
	require.Equal(t, int64(1), inv.Available)
	require.Equal(t, int64(2), inv.Frozen)
}

// Redis holds more than MySQL: MySQL refuses, the drift is named and
// counted, and only the drifted SKU is reported.
func TestCreateOrderReportsDrift(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	ok := f.sku(t, "ok", 5, 5)
	drifted := f.sku(t, "drifted", 1, 3)

	_, err := f.acts.CreateOrder(ctx, contract.CreateOrderInput{
		Order: flashsale.Order{OrderID: f.prefix + "o1", UserID: "u1",
			Items: []flashsale.Item{{SKU: ok, Quantity: 1}, {SKU: drifted, Quantity: 2}}},
	})
	require.Equal(t, contract.TypeFor(flashsale.StockDrift), appErrType(err))
	var appErr *temporal.ApplicationError
	require.True(t, errors.As(err, &appErr))
	require.True(t, appErr.NonRetryable())
	var details contract.StockDriftDetails
	require.NoError(t, appErr.Details(&details))
	require.Equal(t, []string{drifted}, details.DriftedSKUs)

	st, err := f.stock.Stock(ctx, drifted)
	require.NoError(t, err)
	require.Equal(t, int64(2), st.Drift)
	// Nothing was written: the transaction rolled back.
	inv, err := f.orders.Inventory(ctx, ok)
	require.NoError(t, err)
	require.Equal(t, int64(5), inv.Available)
	_, err = f.orders.Order(ctx, f.prefix+"o1")
	require.Equal(t, flashsale.OrderNotFound, flashsale.ErrorCode(err))
}

// The full compensation path on real stores: reserve, create, close,
// release, with every step retried, ends with the unit back in both stores.
func TestCompensationRoundTrip(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	sku := f.sku(t, "round", 2, 2)
	orderID := f.prefix + "o1"
	items := []flashsale.Item{{SKU: sku, Quantity: 1}}

	for range 2 {
		_, err := f.acts.ReserveStock(ctx, contract.ReserveStockInput{OrderID: orderID, Items: items})
		require.NoError(t, err)
		_, err = f.acts.CreateOrder(ctx, contract.CreateOrderInput{Order: flashsale.Order{OrderID: orderID, UserID: "u", Items: items}})
		require.NoError(t, err)
	}
	require.Equal(t, int64(1), f.redisAvailable(t, sku))

	var released int64
	for range 2 {
		_, err := f.acts.CloseOrder(ctx, contract.CloseOrderInput{OrderID: orderID, Status: flashsale.StatusExpired, Reason: "PAYMENT_TIMEOUT"})
		require.NoError(t, err)
		r, err := f.acts.ReleaseStock(ctx, contract.ReleaseStockInput{OrderID: orderID, Items: items})
		require.NoError(t, err)
		released += r.Released
	}
	require.Equal(t, int64(1), released, "released once across retries")
	require.Equal(t, int64(2), f.redisAvailable(t, sku))
	inv, err := f.orders.Inventory(ctx, sku)
	require.NoError(t, err)
	require.Equal(t, orderdb.Inventory{SKU: sku, Total: 2, Available: 2, Price: 1000, Buckets: 4, PerUserLimit: 10}, inv)

	// A payment after the close is recorded for refund, never sold.
	res, err := f.acts.ConfirmPayment(ctx, contract.ConfirmPaymentInput{OrderID: orderID, TransactionID: "late", Amount: 1000})
	require.NoError(t, err)
	require.Equal(t, flashsale.PaymentRefundRequired, res.PaymentStatus)
	inv, err = f.orders.Inventory(ctx, sku)
	require.NoError(t, err)
	require.Equal(t, int64(0), inv.Sold)
}

// MySQL takes an order's units from the row of the bucket Redis took them
// from. Redis's bucket 3 is empty (3 units over 4 buckets) while MySQL's row
// 3 has one: an order whose walk starts at bucket 3 gets its unit from
// Redis's bucket 0, and MySQL freezes it in row 0, not in row 3 where
// crc32 of its id would have started.
func TestCreateOrderTakesTheRowOfTheRedisBucket(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	sku := f.sku(t, "mirror", 4, 3)
	_, err := f.orders.SplitStock(ctx, sku, 4)
	require.NoError(t, err)
	id := f.prefix + "o"
	for i := 0; crc32.ChecksumIEEE([]byte(id))%4 != 3; i++ {
		id = fmt.Sprintf("%so%d", f.prefix, i)
	}
	items := []flashsale.Item{{SKU: sku, Quantity: 1}}
	reserved, err := f.acts.ReserveStock(ctx, contract.ReserveStockInput{OrderID: id, UserID: "u1", Items: items})
	require.NoError(t, err)
	require.Equal(t, map[string]int{sku: 0}, contract.BucketsOf(reserved), "Redis walked from its empty bucket 3 to 0")

	_, err = f.acts.CreateOrder(ctx, contract.CreateOrderInput{Order: flashsale.Order{OrderID: id, UserID: "u1", Items: items},
		Buckets: contract.BucketsOf(reserved)})
	require.NoError(t, err)
	var row int
	require.NoError(t, f.orders.DB().Raw(`SELECT bucket FROM order_items WHERE order_id = ?`, id).Scan(&row).Error)
	require.Equal(t, 0, row)
}
