//go:build integration

package orderdb_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/internal/orderdb"
)

// TestHead: the reader's first look at an order is its owner and status,
// open or closed, and OrderNotFound for an id without a row.
func TestHead(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	putSKU(t, s, "apple", 10, 150)
	createOrder(t, s, "o1", item("apple", 1))
	h, err := s.Head(ctx, "o1")
	require.NoError(t, err)
	require.Equal(t, orderdb.OrderHead{OrderID: "o1", UserID: "user-o1", Status: flashsale.StatusPendingPayment}, h)

	_, err = s.CloseOrder(ctx, "o1", flashsale.StatusCancelled, string(flashsale.CancelledByUser))
	require.NoError(t, err)
	h, err = s.Head(ctx, "o1")
	require.NoError(t, err)
	require.Equal(t, flashsale.StatusCancelled, h.Status)

	_, err = s.Head(ctx, "nope")
	require.Equal(t, flashsale.OrderNotFound, flashsale.ErrorCode(err))
}
