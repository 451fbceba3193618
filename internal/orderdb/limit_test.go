//go:build integration

package orderdb_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/flashsale/flashsale"

	"github.com/stretchr/testify/require"

	"github.com/flashsale/flashsale/internal/orderdb"
)

func putLimitedSKU(t *testing.T, s *orderdb.Store, id string, total int64, limit int) {
	t.Helper()
	_, err := s.PutSKU(context.Background(), flashsale.SKU{ID: id, Total: total, Price: 100, Buckets: 4, PerUserLimit: limit})
	require.NoError(t, err)
}

func TestPerUserLimit(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	putLimitedSKU(t, s, "one", 10, 1)
	putLimitedSKU(t, s, "three", 10, 3)
	putSKU(t, s, "free", 10, 100)

	steps := []struct {
		name    string
		order   orderdb.NewOrder
		wantErr error
	}{
		{"first unit", newOrder("a1", "alice", item("one", 1)), nil},
		{"retry of the same order is not a second purchase", newOrder("a1", "alice", item("one", 1)), nil},
		{"second order over the limit", newOrder("a2", "alice", item("one", 1)), &flashsale.Error{Code: flashsale.LimitExceeded}},
		{"another user is not affected", newOrder("b1", "bob", item("one", 1)), nil},
		{"more than the limit in one order", newOrder("a3", "alice", item("three", 4)), &flashsale.Error{Code: flashsale.LimitExceeded}},
		{"two of three", newOrder("a4", "alice", item("three", 2)), nil},
		{"two more would make four", newOrder("a5", "alice", item("three", 2)), &flashsale.Error{Code: flashsale.LimitExceeded}},
		{"the third unit", newOrder("a6", "alice", item("three", 1)), nil},
		{"a refused item rolls back the whole order", newOrder("a7", "alice", item("free", 1), item("one", 1)), &flashsale.Error{Code: flashsale.LimitExceeded}},
	}
	for _, st := range steps {
		_, err := s.CreateOrder(ctx, st.order)
		if st.wantErr == nil {
			require.NoError(t, err, st.name)
			continue
		}
		require.ErrorIs(t, err, st.wantErr, st.name)
		_, err = s.Order(ctx, st.order.OrderID)
		require.ErrorIs(t, err, &flashsale.Error{Code: flashsale.OrderNotFound}, "%s: no order row", st.name)
	}
	require.Equal(t, int64(8), inventory(t, s, "one").Available)
	require.Equal(t, int64(7), inventory(t, s, "three").Available)
	require.Equal(t, int64(10), inventory(t, s, "free").Available, "the refused multi-item order froze nothing")

	// A closed order gives its units back, so the user may buy again; a
	// paid one keeps counting.
	_, err := s.CloseOrder(ctx, "a1", flashsale.StatusCancelled, "changed mind")
	require.NoError(t, err)
	o, err := s.CreateOrder(ctx, newOrder("a8", "alice", item("one", 1)))
	require.NoError(t, err)
	_, err = s.ConfirmPayment(ctx, "a8", "txn-a8", o.Amount)
	require.NoError(t, err)
	_, err = s.CreateOrder(ctx, newOrder("a9", "alice", item("one", 1)))
	require.ErrorIs(t, err, &flashsale.Error{Code: flashsale.LimitExceeded})

	checkInvariants(t, s, "one", "three", "free")
}

// One user firing many orders at once gets exactly the limit, whatever the
// interleaving: the SKU row lock serialises the count and the insert.
func TestPerUserLimitConcurrent(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	putLimitedSKU(t, s, "hot", 100, 2)

	const n = 20
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			_, errs[i] = s.CreateOrder(ctx, newOrder(fmt.Sprintf("c-%02d", i), "mallory", item("hot", 1)))
		})
	}
	wg.Wait()
	ok := 0
	for _, err := range errs {
		if err == nil {
			ok++
			continue
		}
		require.ErrorIs(t, err, &flashsale.Error{Code: flashsale.LimitExceeded})
	}
	require.Equal(t, 2, ok)
	require.Equal(t, int64(2), inventory(t, s, "hot").Frozen)
	checkInvariants(t, s, "hot")
}

// The limit is per sale: a reset of the SKU (PutSKU before the next sale)
// starts the count again, while within a sale a paid unit keeps counting.
func TestPerUserLimitIsPerSale(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	putLimitedSKU(t, s, "weekly", 10, 1)
	o, err := s.CreateOrder(ctx, newOrder("w1", "alice", item("weekly", 1)))
	require.NoError(t, err)
	_, err = s.ConfirmPayment(ctx, "w1", "txn-w1", o.Amount)
	require.NoError(t, err)
	_, err = s.CreateOrder(ctx, newOrder("w2", "alice", item("weekly", 1)))
	require.ErrorIs(t, err, &flashsale.Error{Code: flashsale.LimitExceeded}, "same sale")
	checkInvariants(t, s, "weekly")

	putLimitedSKU(t, s, "weekly", 10, 1)
	_, err = s.CreateOrder(ctx, newOrder("w3", "alice", item("weekly", 1)))
	require.NoError(t, err, "next sale")
	_, err = s.CreateOrder(ctx, newOrder("w4", "alice", item("weekly", 1)))
	require.ErrorIs(t, err, &flashsale.Error{Code: flashsale.LimitExceeded}, "and the limit holds in it")
}
