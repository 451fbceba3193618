//go:build integration

package orderdb_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/flashsale/flashsale"

	"github.com/stretchr/testify/require"

	"github.com/flashsale/flashsale/internal/orderdb"
)

func TestCreateOrderAmountAndReservation(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	putSKU(t, s, "apple", 10, 150)
	putSKU(t, s, "pear", 5, 990)

	// Items given out of sku order come back sorted, priced from inventory;
	// a caller-supplied UnitPrice is ignored.
	o, err := s.CreateOrder(ctx, newOrder("o1", "alice",
		flashsale.Item{SKU: "pear", Quantity: 2, UnitPrice: 1}, item("apple", 3)))
	require.NoError(t, err)
	require.Equal(t, flashsale.StatusPendingPayment, o.Status)
	require.Equal(t, "alice", o.UserID)
	require.Equal(t, int64(3*150+2*990), o.Amount)
	require.Equal(t, []flashsale.Item{{SKU: "apple", Quantity: 3, UnitPrice: 150}, {SKU: "pear", Quantity: 2, UnitPrice: 990}}, o.Items)
	require.Empty(t, o.Payments)
	require.Nil(t, o.ClosedAt)

	read, err := s.Order(ctx, "o1")
	require.NoError(t, err)
	require.Equal(t, o, read)

	require.Equal(t, orderdb.Inventory{SKU: "apple", Total: 10, Available: 7, Frozen: 3, Price: 150, Buckets: 4, PerUserLimit: testUserLimit}, inventory(t, s, "apple"))
	require.Equal(t, orderdb.Inventory{SKU: "pear", Total: 5, Available: 3, Frozen: 2, Price: 990, Buckets: 4, PerUserLimit: testUserLimit}, inventory(t, s, "pear"))

	var j []struct {
		SKUID                                        string
		Type                                         string
		DeltaAvailable, DeltaFrozen, DeltaSold       int64
		AvailableBefore, AvailableAfter, FrozenAfter int64
	}
	require.NoError(t, s.DB().Raw(`SELECT sku_id, type, delta_available, delta_frozen, delta_sold, available_before, available_after, frozen_after
		FROM inventory_journal WHERE ref_id = 'o1' ORDER BY sku_id`).Scan(&j).Error)
	require.Len(t, j, 2)
	require.Equal(t, "RESERVE", j[0].Type)
	require.Equal(t, []int64{-3, 3, 0, 10, 7, 3}, []int64{j[0].DeltaAvailable, j[0].DeltaFrozen, j[0].DeltaSold, j[0].AvailableBefore, j[0].AvailableAfter, j[0].FrozenAfter})
	require.Equal(t, []int64{-2, 2, 0, 5, 3, 2}, []int64{j[1].DeltaAvailable, j[1].DeltaFrozen, j[1].DeltaSold, j[1].AvailableBefore, j[1].AvailableAfter, j[1].FrozenAfter})

	// A free item is fine.
	putSKU(t, s, "gift", 1, 0)
	o2 := createOrder(t, s, "o2", item("gift", 1))
	require.Zero(t, o2.Amount)

	checkInvariants(t, s, "apple", "pear", "gift")
}

func TestCreateOrderIsIdempotent(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	putSKU(t, s, "sku", 2, 100)

	first := createOrder(t, s, "o1", item("sku", 2))
	// The retry finds the order even though the stock is now sold out.
	// (Another buyer or other lines under the id are not a retry:
	// TestCreateOrderUnderATakenID.)
	again, err := s.CreateOrder(ctx, newOrder("o1", "user-o1", item("sku", 2)))
	require.NoError(t, err)
	require.Equal(t, first, again)
	require.Equal(t, int64(0), inventory(t, s, "sku").Available)
	require.Equal(t, int64(2), inventory(t, s, "sku").Frozen, "stock moved once")
	require.Equal(t, int64(1), count(t, s, `SELECT COUNT(*) FROM inventory_journal WHERE type = 'RESERVE'`))

	// A retry of a closed order returns it as it is now, moving nothing.
	_, err = s.CloseOrder(ctx, "o1", flashsale.StatusExpired, "timeout")
	require.NoError(t, err)
	again, err = s.CreateOrder(ctx, newOrder("o1", "user-o1", item("sku", 2)))
	require.NoError(t, err)
	require.Equal(t, flashsale.StatusExpired, again.Status)
	require.Equal(t, int64(2), inventory(t, s, "sku").Available)
	checkInvariants(t, s, "sku")
}

func TestCreateOrderConcurrentRetriesMoveStockOnce(t *testing.T) {
	s := newStore(t)
	putSKU(t, s, "sku", 10, 100)
	const n = 20
	results := make([]orderdb.Order, n)
	errs := make([]error, n)
	done := make(chan struct{})
	for i := range n {
		go func() {
			defer func() { done <- struct{}{} }()
			results[i], errs[i] = s.CreateOrder(context.Background(), newOrder("same", "u", item("sku", 3)))
		}()
	}
	for range n {
		<-done
	}
	for i := range n {
		require.NoError(t, errs[i])
		require.Equal(t, "same", results[i].OrderID)
		require.Equal(t, int64(300), results[i].Amount)
	}
	require.Equal(t, int64(7), inventory(t, s, "sku").Available)
	require.Equal(t, int64(1), count(t, s, `SELECT COUNT(*) FROM orders`))
	checkInvariants(t, s, "sku")
}

func TestCreateOrderFailuresRollBack(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	putSKU(t, s, "a", 10, 100)
	putSKU(t, s, "b", 1, 100)
	before := map[string]orderdb.Inventory{"a": inventory(t, s, "a"), "b": inventory(t, s, "b")}

	cases := []struct {
		name    string
		items   []flashsale.Item
		wantErr error
		wantMsg string
	}{
		// "a" is reserved first (sku order), then "b" is short: "a" must be
		// rolled back too.
		{"second item short", []flashsale.Item{item("a", 2), item("b", 2)}, &flashsale.Error{Code: flashsale.StockDrift}, "sku b"},
		{"single item short", []flashsale.Item{item("a", 11)}, &flashsale.Error{Code: flashsale.StockDrift}, "sku a"},
		{"unknown sku after a good one", []flashsale.Item{item("a", 1), item("zzz", 1)}, &flashsale.Error{Code: flashsale.UnknownSKU}, "sku zzz"},
		{"unknown sku alone", []flashsale.Item{item("nope", 1)}, &flashsale.Error{Code: flashsale.UnknownSKU}, "sku nope"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			id := "fail-" + string(rune('a'+i))
			_, err := s.CreateOrder(ctx, newOrder(id, "u", tc.items...))
			require.ErrorIs(t, err, tc.wantErr)
			require.Contains(t, err.Error(), tc.wantMsg)
			require.Contains(t, err.Error(), "create order "+id)

			_, err = s.Order(ctx, id)
			require.ErrorIs(t, err, &flashsale.Error{Code: flashsale.OrderNotFound}, "no order row")
			require.Zero(t, count(t, s, `SELECT COUNT(*) FROM order_items WHERE order_id = ?`, id))
			require.Zero(t, count(t, s, `SELECT COUNT(*) FROM inventory_journal WHERE ref_id = ?`, id))
			for sku, inv := range before {
				require.Equal(t, inv, inventory(t, s, sku), "sku %s untouched", sku)
			}
		})
	}

	// The same id can be used once stock suffices: failures left no trace.
	createOrder(t, s, "fail-a", item("a", 2), item("b", 1))
	checkInvariants(t, s, "a", "b")
}

func TestCreateOrderValidation(t *testing.T) {
	s := newStore(t)
	putSKU(t, s, "sku", 10, 100)
	long := strings.Repeat("x", 65)
	cases := []struct {
		name string
		o    orderdb.NewOrder
	}{
		{"empty order id", newOrder("", "u", item("sku", 1))},
		{"long order id", newOrder(long, "u", item("sku", 1))},
		{"empty user", newOrder("o", "", item("sku", 1))},
		{"long user", newOrder("o", long, item("sku", 1))},
		{"no items", newOrder("o", "u")},
		{"zero quantity", newOrder("o", "u", item("sku", 0))},
		{"negative quantity", newOrder("o", "u", item("sku", -1))},
		{"empty sku", newOrder("o", "u", item("", 1))},
		{"duplicate sku", newOrder("o", "u", item("sku", 1), item("sku", 1))},
		{"zero pay-by", orderdb.NewOrder{Order: flashsale.Order{OrderID: "o", UserID: "u", Items: []flashsale.Item{item("sku", 1)}}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.CreateOrder(context.Background(), tc.o)
			require.ErrorIs(t, err, &flashsale.Error{Code: flashsale.Invalid})
		})
	}
	require.Equal(t, int64(10), inventory(t, s, "sku").Available)
	require.Zero(t, count(t, s, `SELECT COUNT(*) FROM orders`))
}

func TestCreateOrderAmountOverflow(t *testing.T) {
	s := newStore(t)
	_, err := s.PutSKU(context.Background(), flashsale.SKU{ID: "dear", Total: 10, Price: 1 << 62, Buckets: 1, PerUserLimit: 1})
	require.NoError(t, err)
	_, err = s.CreateOrder(context.Background(), newOrder("o", "u", item("dear", 2)))
	require.ErrorIs(t, err, &flashsale.Error{Code: flashsale.Invalid})
	require.Equal(t, int64(10), inventory(t, s, "dear").Available)
}

func TestConfirmPayment(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	putSKU(t, s, "sku", 10, 500)

	t.Run("capture", func(t *testing.T) {
		o := createOrder(t, s, "pay", item("sku", 2))
		res, err := s.ConfirmPayment(ctx, "pay", "txn-1", o.Amount)
		require.NoError(t, err)
		require.False(t, res.Duplicate)
		require.Equal(t, flashsale.PaymentCaptured, res.Payment.Status)
		require.Equal(t, "txn-1", res.Payment.TransactionID)
		require.Equal(t, int64(1000), res.Payment.Amount)
		require.Equal(t, flashsale.StatusPaid, res.Order.Status)
		require.Len(t, res.Order.Payments, 1)

		read, err := s.Order(ctx, "pay")
		require.NoError(t, err)
		require.Equal(t, res.Order, read, "returned order equals a fresh read")
		inv := inventory(t, s, "sku")
		require.Equal(t, []int64{8, 0, 2}, []int64{inv.Available, inv.Frozen, inv.Sold})
	})

	t.Run("duplicate txn returns recorded outcome", func(t *testing.T) {
		for range 3 {
			res, err := s.ConfirmPayment(ctx, "pay", "txn-1", 1000)
			require.NoError(t, err)
			require.True(t, res.Duplicate)
			require.Equal(t, flashsale.PaymentCaptured, res.Payment.Status)
			require.Equal(t, flashsale.StatusPaid, res.Order.Status)
		}
		// Even with a different amount: the transaction was already settled.
		res, err := s.ConfirmPayment(ctx, "pay", "txn-1", 1)
		require.NoError(t, err)
		require.True(t, res.Duplicate)
		require.Equal(t, int64(1000), res.Payment.Amount)
		require.Equal(t, int64(2), inventory(t, s, "sku").Sold, "sold once")
		require.Equal(t, int64(1), count(t, s, `SELECT COUNT(*) FROM payments`))
	})

	t.Run("second txn on paid order needs refund", func(t *testing.T) {
		res, err := s.ConfirmPayment(ctx, "pay", "txn-2", 1000)
		require.NoError(t, err)
		require.False(t, res.Duplicate)
		require.Equal(t, flashsale.PaymentRefundRequired, res.Payment.Status)
		require.Contains(t, res.Payment.Reason, "txn-1")
		require.Equal(t, flashsale.StatusPaid, res.Order.Status)
		require.Len(t, res.Order.Payments, 2)

		res, err = s.ConfirmPayment(ctx, "pay", "txn-2", 1000)
		require.NoError(t, err)
		require.True(t, res.Duplicate)
		require.Equal(t, flashsale.PaymentRefundRequired, res.Payment.Status)
		require.Equal(t, int64(2), inventory(t, s, "sku").Sold)
	})

	t.Run("amount mismatch writes nothing", func(t *testing.T) {
		o := createOrder(t, s, "mismatch", item("sku", 1))
		_, err := s.ConfirmPayment(ctx, "mismatch", "txn-m", o.Amount-1)
		require.ErrorIs(t, err, &flashsale.Error{Code: flashsale.AmountMismatch})
		require.Zero(t, count(t, s, `SELECT COUNT(*) FROM payments WHERE transaction_id = 'txn-m'`))
		read, err := s.Order(ctx, "mismatch")
		require.NoError(t, err)
		require.Equal(t, flashsale.StatusPendingPayment, read.Status)
		require.Equal(t, int64(1), inventory(t, s, "sku").Frozen)

		// The right amount later still works.
		res, err := s.ConfirmPayment(ctx, "mismatch", "txn-m2", o.Amount)
		require.NoError(t, err)
		require.Equal(t, flashsale.PaymentCaptured, res.Payment.Status)
	})

	t.Run("payment after close is refunded once", func(t *testing.T) {
		for _, to := range []flashsale.Status{flashsale.StatusExpired, flashsale.StatusCancelled} {
			id := "closed-" + string(to)
			o := createOrder(t, s, id, item("sku", 1))
			_, err := s.CloseOrder(ctx, id, to, "too late")
			require.NoError(t, err)
			avail := inventory(t, s, "sku")

			for i := range 5 {
				res, err := s.ConfirmPayment(ctx, id, "txn-"+id, o.Amount)
				require.NoError(t, err)
				require.Equal(t, i > 0, res.Duplicate)
				require.Equal(t, flashsale.PaymentRefundRequired, res.Payment.Status)
				require.Contains(t, res.Payment.Reason, string(to))
				require.Equal(t, to, res.Order.Status)
			}
			// RecordRefund for the same transaction is the same single row.
			p, err := s.RecordRefund(ctx, orderdb.Payment{TransactionID: "txn-" + id, OrderID: id, Amount: o.Amount})
			require.NoError(t, err)
			require.Equal(t, flashsale.PaymentRefundRequired, p.Status)
			require.Equal(t, int64(1), count(t, s, `SELECT COUNT(*) FROM payments WHERE order_id = ?`, id))
			require.Equal(t, avail, inventory(t, s, "sku"), "refunds never touch inventory")
		}
	})

	t.Run("unknown order", func(t *testing.T) {
		_, err := s.ConfirmPayment(ctx, "ghost", "txn-ghost", 100)
		require.ErrorIs(t, err, &flashsale.Error{Code: flashsale.OrderNotFound})
		require.Zero(t, count(t, s, `SELECT COUNT(*) FROM payments WHERE transaction_id = 'txn-ghost'`))
	})

	t.Run("txn id reused for another order", func(t *testing.T) {
		o := createOrder(t, s, "other", item("sku", 1))
		_, err := s.ConfirmPayment(ctx, "other", "txn-1", o.Amount)
		require.ErrorIs(t, err, &flashsale.Error{Code: flashsale.TransactionConflict})
		read, err := s.Order(ctx, "other")
		require.NoError(t, err)
		require.Equal(t, flashsale.StatusPendingPayment, read.Status)
	})

	t.Run("validation", func(t *testing.T) {
		for _, c := range []struct{ order, txn string }{{"", "t"}, {"pay", ""}, {"pay", strings.Repeat("t", 129)}} {
			_, err := s.ConfirmPayment(ctx, c.order, c.txn, 1)
			require.ErrorIs(t, err, &flashsale.Error{Code: flashsale.Invalid})
		}
		_, err := s.ConfirmPayment(ctx, "pay", "t", -1)
		require.ErrorIs(t, err, &flashsale.Error{Code: flashsale.Invalid})
	})

	checkInvariants(t, s, "sku")
}

func TestCloseOrder(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	putSKU(t, s, "a", 10, 100)
	putSKU(t, s, "b", 10, 300)

	t.Run("releases units once", func(t *testing.T) {
		createOrder(t, s, "o1", item("a", 2), item("b", 3))
		closed, err := s.CloseOrder(ctx, "o1", flashsale.StatusExpired, "pay-by passed")
		require.NoError(t, err)
		require.Equal(t, flashsale.StatusExpired, closed.Status)
		require.Equal(t, "pay-by passed", closed.Reason)
		require.NotNil(t, closed.ClosedAt)
		read, err := s.Order(ctx, "o1")
		require.NoError(t, err)
		require.Equal(t, closed, read)

		for range 3 {
			again, err := s.CloseOrder(ctx, "o1", flashsale.StatusExpired, "another reason")
			require.NoError(t, err)
			require.Equal(t, closed, again, "idempotent: unchanged")
		}
		for _, sku := range []string{"a", "b"} {
			inv := inventory(t, s, sku)
			require.Equal(t, []int64{10, 0, 0}, []int64{inv.Available, inv.Frozen, inv.Sold})
		}
		require.Equal(t, int64(2), count(t, s, `SELECT COUNT(*) FROM inventory_journal WHERE ref_id = 'o1' AND type = 'RELEASE'`))

		_, err = s.CloseOrder(ctx, "o1", flashsale.StatusCancelled, "user")
		require.ErrorIs(t, err, &flashsale.Error{Code: flashsale.OrderClosed})
	})

	t.Run("cannot release a paid order", func(t *testing.T) {
		o := createOrder(t, s, "o2", item("a", 1))
		_, err := s.ConfirmPayment(ctx, "o2", "txn-o2", o.Amount)
		require.NoError(t, err)
		before := inventory(t, s, "a")
		for _, to := range []flashsale.Status{flashsale.StatusExpired, flashsale.StatusCancelled} {
			_, err = s.CloseOrder(ctx, "o2", to, "late timer")
			require.ErrorIs(t, err, &flashsale.Error{Code: flashsale.AlreadyPaid})
		}
		require.Equal(t, before, inventory(t, s, "a"))
		read, err := s.Order(ctx, "o2")
		require.NoError(t, err)
		require.Equal(t, flashsale.StatusPaid, read.Status)
		require.Nil(t, read.ClosedAt)
	})

	t.Run("cancel", func(t *testing.T) {
		createOrder(t, s, "o3", item("b", 1))
		c, err := s.CloseOrder(ctx, "o3", flashsale.StatusCancelled, strings.Repeat("é", 300))
		require.NoError(t, err)
		require.Equal(t, flashsale.StatusCancelled, c.Status)
		require.Len(t, []rune(c.Reason), 255, "long reason truncated, not rejected")
		_, err = s.CloseOrder(ctx, "o3", flashsale.StatusExpired, "")
		require.ErrorIs(t, err, &flashsale.Error{Code: flashsale.OrderClosed})
	})

	t.Run("errors", func(t *testing.T) {
		_, err := s.CloseOrder(ctx, "ghost", flashsale.StatusExpired, "")
		require.ErrorIs(t, err, &flashsale.Error{Code: flashsale.OrderNotFound})
		createOrder(t, s, "o4", item("a", 1))
		for _, to := range []flashsale.Status{flashsale.StatusPaid, flashsale.StatusPendingPayment, "BOGUS"} {
			_, err = s.CloseOrder(ctx, "o4", to, "")
			require.ErrorIs(t, err, &flashsale.Error{Code: flashsale.Invalid})
		}
	})

	checkInvariants(t, s, "a", "b")
}

func TestRecordRefund(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)

	// Money for an order that never existed: recorded once, however often.
	var first orderdb.Payment
	for i := range 4 {
		p, err := s.RecordRefund(ctx, orderdb.Payment{
			TransactionID: "txn-x", OrderID: "ghost", Amount: 1234, Status: flashsale.PaymentCaptured, Reason: "unknown order",
		})
		require.NoError(t, err)
		require.Equal(t, flashsale.PaymentRefundRequired, p.Status, "forced to REFUND_REQUIRED")
		require.Equal(t, "unknown order", p.Reason)
		require.WithinDuration(t, time.Now(), p.CreatedAt, time.Minute)
		if i == 0 {
			first = p
		}
		require.Equal(t, first, p)
	}
	require.Equal(t, int64(1), count(t, s, `SELECT COUNT(*) FROM payments WHERE transaction_id = 'txn-x'`))

	// A repeat after the transaction was captured reports the capture, so
	// the caller does not refund money that paid an order.
	putSKU(t, s, "sku", 1, 10)
	o := createOrder(t, s, "o1", item("sku", 1))
	_, err := s.ConfirmPayment(ctx, "o1", "txn-o1", o.Amount)
	require.NoError(t, err)
	p, err := s.RecordRefund(ctx, orderdb.Payment{TransactionID: "txn-o1", OrderID: "o1", Amount: o.Amount})
	require.NoError(t, err)
	require.Equal(t, flashsale.PaymentCaptured, p.Status)

	_, err = s.RecordRefund(ctx, orderdb.Payment{TransactionID: "", OrderID: "o1"})
	require.ErrorIs(t, err, &flashsale.Error{Code: flashsale.Invalid})
	_, err = s.RecordRefund(ctx, orderdb.Payment{TransactionID: "t", OrderID: "o1", Amount: -1})
	require.ErrorIs(t, err, &flashsale.Error{Code: flashsale.Invalid})
	checkInvariants(t, s, "sku")
}

func TestPaymentsForOrderWithoutRow(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	none, err := s.Payments(ctx, "rejected-1")
	require.NoError(t, err)
	require.Empty(t, none)

	for range 3 { // a provider retrying the same callback
		_, err := s.RecordRefund(ctx, orderdb.Payment{TransactionID: "tx-r1", OrderID: "rejected-1", Amount: 10, Reason: "UNKNOWN_ORDER"})
		require.NoError(t, err)
	}
	pays, err := s.Payments(ctx, "rejected-1")
	require.NoError(t, err)
	require.Len(t, pays, 1)
	require.Equal(t, flashsale.PaymentRefundRequired, pays[0].Status)
	require.Equal(t, "UNKNOWN_ORDER", pays[0].Reason)
}
