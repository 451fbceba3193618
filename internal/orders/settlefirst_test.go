//go:build integration

package orders_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/internal/app/apptest"
	"github.com/flashsale/flashsale/internal/orders"
	"github.com/flashsale/flashsale/workflows"
)

// Settlement goes first (issue 23, item 5): payments of orders already
// placed are answered while a backlog of ten times as many new
// reservations, started at once, is still being served. A pay update runs
// in a workflow task on the worker's sticky queue, which the worker polls
// beside the normal queue where the new reservations wait, and settles
// inside that task; so no payment waits for the backlog to drain. The claim
// is an order, counted exactly: every payment's answer comes before the
// backlog's last reservation answer.
func TestPaymentsAreServedBeforeABacklogOfReservationsDrains(t *testing.T) {
	ctx := context.Background()
	sys := apptest.Start(t, apptest.Options{Name: "settlefirst"})
	const pays, backlog = 10, 200
	sku := sys.ID + "-s"
	_, err := sys.Orders.PutSKU(ctx, flashsale.SKU{ID: sku, Total: pays + backlog, Price: 100, Buckets: 4, PerUserLimit: 1})
	require.NoError(t, err)
	_, err = sys.Stock.Preheat(ctx, sku, pays+backlog, 4)
	require.NoError(t, err)
	svc := &orders.Service{Temporal: sys.Temporal, TaskQueue: sys.Config.TaskQueue, Orders: sys.Orders}
	order := func(kind string, i int) workflows.OrderInput {
		id := fmt.Sprintf("%s-%s-%d", sys.ID, kind, i)
		return workflows.OrderInput{OrderID: id, UserID: id, Items: []flashsale.Item{{SKU: sku, Quantity: 1}}}
	}
	for i := range pays {
		res, err := svc.Place(ctx, order("pay", i))
		require.NoError(t, err)
		require.Equal(t, flashsale.StatusPendingPayment, res.Status)
	}

	var mu sync.Mutex
	var events []string // "pay" or "new", in the order their answers came
	var wg sync.WaitGroup
	errs := make(chan error, pays+backlog)
	for i := range backlog {
		wg.Go(func() {
			res, err := svc.Place(ctx, order("new", i))
			if err == nil && res.Status != flashsale.StatusPendingPayment {
				err = fmt.Errorf("new order %d: %s %s", i, res.Status, res.Reason)
			}
			errs <- err
			mu.Lock()
			events = append(events, "new")
			mu.Unlock()
		})
	}
	// The payments arrive once the backlog is at the server: wait for the
	// first of its answers, so the rest are queued behind it.
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(events) > 0
	}, time.Minute, time.Millisecond)
	for i := range pays {
		wg.Go(func() {
			id := order("pay", i).OrderID
			out, err := svc.Pay(ctx, id, workflows.Payment{TransactionID: "t-" + id, Amount: 100})
			if err == nil && (out.Queued || out.Status != flashsale.StatusPaid) {
				err = fmt.Errorf("pay %s: %+v", id, out)
			}
			errs <- err
			mu.Lock()
			events = append(events, "pay")
			mu.Unlock()
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	last := -1
	newAfter := 0
	for i, e := range events {
		if e == "pay" {
			last = i
		}
	}
	for _, e := range events[last+1:] {
		if e == "new" {
			newAfter++
		}
	}
	// Every payment answered, and reservations of the backlog still being
	// served after the last of them.
	require.Len(t, events, pays+backlog)
	require.Positive(t, newAfter, "the backlog drained before the last payment was answered: %v", events)
	t.Logf("%d of %d new reservations answered after the last payment", newAfter, backlog)
}
