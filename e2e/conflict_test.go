//go:build integration

package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/internal/orderdb"
	"github.com/flashsale/flashsale/internal/orders"
	"github.com/flashsale/flashsale/internal/testenv"
	"github.com/flashsale/flashsale/workflows"
)

// fullService is an orders.Service on the stack's task queue with the
// stack's database, as the HTTP API builds it: payments reaching a completed
// order go to the database.
func fullService(t *testing.T, s *stack) *orders.Service {
	t.Helper()
	var dsn string
	for _, kv := range s.env {
		if v, ok := strings.CutPrefix(kv, "MYSQL_DSN="); ok {
			dsn = v
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	db, err := orderdb.Open(ctx, dsn)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	svc := newOrderService(t, s).svc
	svc.Orders = db
	return svc
}

// TestTransactionConflictNeverWedgesAnOrder: a transaction id captured for
// order A and then sent to orders B and C is answered as a conflict at
// once. B stays payable and is paid with its own transaction; C, never
// paid, expires on time and its unit is back on sale in MySQL and Redis.
// Before, the conflict was retried forever: B's and C's workflows could
// never take another payment, a cancel or their deadline.
func TestTransactionConflictNeverWedgesAnOrder(t *testing.T) {
	s := newStack(t, 15*time.Minute)
	sku := "e2e-conflict-" + testenv.UniqueID(t)
	s.createSKU(sku, 3, 500, 4)
	svc := fullService(t, s)
	place := func(id string, timeout time.Duration) workflows.Reservation {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		r, err := svc.Place(ctx, workflows.OrderInput{OrderID: id, UserID: "u-" + id,
			Items: []flashsale.Item{{SKU: sku, Quantity: 1}}, PaymentTimeout: timeout})
		require.NoError(t, err)
		require.Equal(t, flashsale.StatusPendingPayment, r.Status)
		return r
	}
	// Each call is bounded well below a test timeout, so a wedged order
	// fails here instead of hanging the suite.
	pay := func(orderID, txn string) workflows.PaymentOutcome {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		out, err := svc.Pay(ctx, orderID, workflows.Payment{TransactionID: txn, Amount: 500})
		require.NoError(t, err, "pay %s with %s", orderID, txn)
		return out
	}
	status := func(orderID string) workflows.OrderView {
		t.Helper()
		v, err := svc.Status(context.Background(), orderID)
		require.NoError(t, err)
		return v
	}
	a, b, c := "a-"+sku, "b-"+sku, "c-"+sku
	t1, t2 := "t1-"+sku, "t2-"+sku

	place(a, 0)
	require.Equal(t, workflows.PaymentOutcome{OrderID: a, TransactionID: t1, Status: flashsale.StatusPaid}, pay(a, t1))

	place(b, 0)
	conflictB := workflows.PaymentOutcome{OrderID: b, TransactionID: t1, Status: flashsale.StatusPendingPayment,
		Conflict: true, Reason: flashsale.TransactionConflict}
	require.Equal(t, conflictB, pay(b, t1))
	vb := status(b)
	require.Equal(t, flashsale.StatusPendingPayment, vb.Status)
	require.Equal(t, []workflows.PaymentOutcome{conflictB}, vb.Payments)
	paidB := workflows.PaymentOutcome{OrderID: b, TransactionID: t2, Status: flashsale.StatusPaid}
	require.Equal(t, paidB, pay(b, t2))
	require.Equal(t, []workflows.PaymentOutcome{conflictB, paidB}, status(b).Payments)

	// C has a short deadline; the conflict must not keep it from expiring.
	rc := place(c, 5*time.Second)
	require.Equal(t, workflows.PaymentOutcome{OrderID: c, TransactionID: t1, Status: flashsale.StatusPendingPayment,
		Conflict: true, Reason: flashsale.TransactionConflict}, pay(c, t1))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var vc workflows.OrderView
	require.NoError(t, svc.Temporal.GetWorkflow(ctx, workflows.OrderWorkflowID(c), "").Get(ctx, &vc))
	require.Equal(t, flashsale.StatusExpired, vc.Status)
	require.Equal(t, flashsale.PaymentTimeout, vc.Reason)
	require.WithinDuration(t, rc.PayBy, time.Now(), 10*time.Second, "expired on time")
	require.Equal(t, stockOut{SKU: sku, Total: 3, Available: 1, DBAvailable: 1, Sold: 2, BucketCount: 4}, s.stock(sku),
		"A and B sold, C's unit back in MySQL and Redis")

	// After C's workflow ended: B's transaction is still not C's to refund,
	// and nothing is recorded for C.
	require.Equal(t, workflows.PaymentOutcome{OrderID: c, TransactionID: t2, Status: flashsale.StatusExpired,
		Conflict: true, Reason: flashsale.TransactionConflict}, pay(c, t2))
	pays, err := svc.Orders.Payments(context.Background(), c)
	require.NoError(t, err)
	require.Empty(t, pays)
}
