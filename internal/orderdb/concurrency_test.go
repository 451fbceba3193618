//go:build integration

package orderdb_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/flashsale/flashsale"

	"github.com/stretchr/testify/require"

	"github.com/flashsale/flashsale/internal/orderdb"
)

// run starts every fn at the same moment (behind a barrier, to maximise
// contention) and waits for all of them.
func run(fns []func()) {
	start := make(chan struct{})
	var wg sync.WaitGroup
	for _, fn := range fns {
		wg.Go(func() {
			<-start
			fn()
		})
	}
	close(start)
	wg.Wait()
}

type payCall struct {
	txn string
	res orderdb.PaymentResult
	err error
}

type closeCall struct {
	to  flashsale.Status
	res orderdb.Order
	err error
}

func TestFlashSaleConcurrency(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	const stock, buyers = 50, 200
	putSKU(t, s, "hot", stock, 100)

	// Phase 1: 200 buyers race for 50 units.
	errs := make([]error, buyers)
	fns := make([]func(), buyers)
	for i := range buyers {
		fns[i] = func() {
			_, errs[i] = s.CreateOrder(ctx, newOrder(fmt.Sprintf("o-%03d", i), fmt.Sprintf("u-%03d", i), item("hot", 1)))
		}
	}
	run(fns)
	var orders []string
	for i, err := range errs {
		if err == nil {
			orders = append(orders, fmt.Sprintf("o-%03d", i))
			continue
		}
		require.ErrorIs(t, err, &flashsale.Error{Code: flashsale.StockDrift}, "the only acceptable failure")
	}
	require.Len(t, orders, stock, "exactly the stock is sold, no more, no less")
	require.Equal(t, int64(stock), count(t, s, `SELECT COUNT(*) FROM orders`))
	inv := inventory(t, s, "hot")
	require.Equal(t, []int64{0, stock, 0}, []int64{inv.Available, inv.Frozen, inv.Sold})
	checkInvariants(t, s, "hot")

	// Phase 2: every order gets a different mix of concurrent pay/close
	// calls, including the same order paid and closed at once and repeated
	// deliveries of the same call.
	pays := make(map[string][]*payCall)
	closes := make(map[string][]*closeCall)
	fns = nil
	pay := func(id, txn string, amount int64) {
		c := &payCall{txn: txn}
		pays[id] = append(pays[id], c)
		fns = append(fns, func() { c.res, c.err = s.ConfirmPayment(ctx, id, txn, amount) })
	}
	closeOrder := func(id string, to flashsale.Status) {
		c := &closeCall{to: to}
		closes[id] = append(closes[id], c)
		fns = append(fns, func() { c.res, c.err = s.CloseOrder(ctx, id, to, "test") })
	}
	for i, id := range orders {
		switch i % 6 {
		case 0: // payment races the expiry timer
			pay(id, "txn-"+id, 100)
			closeOrder(id, flashsale.StatusExpired)
		case 1: // payment callback delivered three times
			pay(id, "txn-"+id, 100)
			pay(id, "txn-"+id, 100)
			pay(id, "txn-"+id, 100)
		case 2: // expiry retried while the user cancels
			closeOrder(id, flashsale.StatusExpired)
			closeOrder(id, flashsale.StatusExpired)
			closeOrder(id, flashsale.StatusCancelled)
		case 3: // user paid twice through different transactions
			pay(id, "txn-a-"+id, 100)
			pay(id, "txn-b-"+id, 100)
		case 4: // everything, twice
			pay(id, "txn-"+id, 100)
			pay(id, "txn-"+id, 100)
			closeOrder(id, flashsale.StatusCancelled)
			closeOrder(id, flashsale.StatusCancelled)
		case 5: // wrong amount: rejected, order stays pending
			pay(id, "txn-"+id, 99)
		}
	}
	rand.Shuffle(len(fns), func(i, j int) { fns[i], fns[j] = fns[j], fns[i] })
	run(fns)

	var pendingUnits, paidUnits int64
	for i, id := range orders {
		final, err := s.Order(ctx, id)
		require.NoError(t, err)

		captured := map[string]bool{}
		firstSeen := map[string]int{}
		for _, c := range pays[id] {
			if i%6 == 5 {
				require.ErrorIs(t, c.err, &flashsale.Error{Code: flashsale.AmountMismatch})
				continue
			}
			require.NoError(t, c.err, "order %s pay %s", id, c.txn)
			if !c.res.Duplicate {
				firstSeen[c.txn]++
			}
			switch c.res.Payment.Status {
			case flashsale.PaymentCaptured:
				captured[c.txn] = true
			case flashsale.PaymentRefundRequired:
				require.NotEqual(t, flashsale.StatusPendingPayment, final.Status)
			default:
				t.Fatalf("order %s: payment status %q", id, c.res.Payment.Status)
			}
		}
		for txn, n := range firstSeen {
			require.Equal(t, 1, n, "order %s txn %s recorded by exactly one call", id, txn)
		}
		require.LessOrEqual(t, len(captured), 1, "order %s captured at most once", id)

		closedOK := 0
		for _, c := range closes[id] {
			switch {
			case c.err == nil:
				closedOK++
				require.Equal(t, c.to, final.Status, "order %s: a successful close matches the final status", id)
			case errors.Is(c.err, &flashsale.Error{Code: flashsale.AlreadyPaid}):
				require.Equal(t, flashsale.StatusPaid, final.Status)
			case errors.Is(c.err, &flashsale.Error{Code: flashsale.OrderClosed}):
				require.NotEqual(t, c.to, final.Status)
			default:
				t.Fatalf("order %s close: %v", id, c.err)
			}
		}

		switch final.Status {
		case flashsale.StatusPaid:
			require.Len(t, captured, 1, "order %s paid by exactly one txn", id)
			require.Zero(t, closedOK, "order %s: paid orders are never closed", id)
			paidUnits++
		case flashsale.StatusExpired, flashsale.StatusCancelled:
			require.Empty(t, captured, "order %s: closed orders capture nothing", id)
			require.NotZero(t, closedOK)
		case flashsale.StatusPendingPayment:
			require.Contains(t, []int{5}, i%6, "order %s left pending", id)
			pendingUnits++
		}
		switch i % 6 {
		case 1, 3:
			require.Equal(t, flashsale.StatusPaid, final.Status, "order %s: nothing closes it", id)
		case 2:
			require.Contains(t, []flashsale.Status{flashsale.StatusExpired, flashsale.StatusCancelled}, final.Status)
		}
		// A payment result never contradicts the stored order.
		for _, c := range pays[id] {
			if c.err == nil {
				require.Equal(t, id, c.res.Order.OrderID)
				require.Contains(t, final.Payments, c.res.Payment)
			}
		}
	}

	inv = inventory(t, s, "hot")
	require.Equal(t, pendingUnits, inv.Frozen)
	require.Equal(t, paidUnits, inv.Sold)
	require.Equal(t, int64(stock), inv.Available+inv.Frozen+inv.Sold)
	checkInvariants(t, s, "hot")
	t.Logf("final: available=%d frozen=%d sold=%d", inv.Available, inv.Frozen, inv.Sold)
}

// Multi-item orders listing SKUs in random order, created, paid and closed
// concurrently: the sorted lock order (plus the deadlock retry) means no
// call fails and the books still balance.
func TestMultiSKUConcurrencyNoDeadlock(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	skus := []string{"x", "y", "z"}
	for _, sku := range skus {
		putSKU(t, s, sku, 1000, 10)
	}
	const n = 120
	fns := make([]func(), n)
	errs := make([]error, n)
	for i := range n {
		items := []flashsale.Item{item("x", 1+int64(i%3)), item("y", 2), item("z", 1)}
		rand.Shuffle(len(items), func(a, b int) { items[a], items[b] = items[b], items[a] })
		items = items[:2+i%2]
		fns[i] = func() { _, errs[i] = s.CreateOrder(ctx, newOrder(fmt.Sprintf("m-%d", i), "u", items...)) }
	}
	run(fns)
	for _, err := range errs {
		require.NoError(t, err)
	}

	amounts := map[string]int64{}
	for i := range n {
		o, err := s.Order(ctx, fmt.Sprintf("m-%d", i))
		require.NoError(t, err)
		amounts[o.OrderID] = o.Amount
	}
	fns = fns[:0]
	errs = make([]error, 2*n)
	for i := range n {
		id := fmt.Sprintf("m-%d", i)
		fns = append(fns,
			func() { _, errs[2*i] = s.ConfirmPayment(ctx, id, "t-"+id, amounts[id]) },
			func() {
				_, err := s.CloseOrder(ctx, id, flashsale.StatusExpired, "race")
				if errors.Is(err, &flashsale.Error{Code: flashsale.AlreadyPaid}) {
					err = nil
				}
				errs[2*i+1] = err
			})
	}
	run(fns)
	for _, err := range errs {
		require.NoError(t, err)
	}
	checkInvariants(t, s, skus...)
}
