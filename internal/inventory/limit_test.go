//go:build integration

package inventory

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flashsale/flashsale"
)

// held is the buyer's count as the edge reads it.
func held(t *testing.T, s *Store, sku, user string) Allowance {
	t.Helper()
	av, err := s.AvailableTo(context.Background(), sku, user)
	require.NoError(t, err)
	return av.Allowance
}

func requireCode(t *testing.T, err error, code flashsale.Code) {
	t.Helper()
	require.Error(t, err)
	require.Equal(t, code, flashsale.ErrorCode(err), "%v", err)
}

// One buyer with limit 3 racing 30 single-unit orders over 8 buckets holds
// exactly 3 units in Redis; the rest are refused holding nothing. Retries
// count nothing twice, releases give the allowance back once, and a new sale
// starts from zero.
func TestLimitBeforeReserve(t *testing.T) {
	s, rdb := newStore(t)
	ctx := context.Background()
	sku := newSKU(t, rdb)
	require.NoError(t, s.SetLimit(ctx, sku, 3, 1000))
	_, err := s.Preheat(ctx, sku, 100, 8)
	require.NoError(t, err)

	// (a) a line over the limit is refused before anything is taken.
	_, err = s.ReserveFor(ctx, "hoarder", "big", sku, 4)
	requireCode(t, err, flashsale.LimitExceeded)
	require.EqualValues(t, 100, stock(t, s, sku).Available)
	require.Equal(t, Allowance{Limit: 3}, held(t, s, sku, "hoarder"))

	// (b) concurrent orders of one buyer, starting in different buckets.
	var mu sync.Mutex
	var won []string
	var wg sync.WaitGroup
	for i := range 30 {
		wg.Go(func() {
			id := fmt.Sprintf("o-%d", i)
			_, err := s.ReserveFor(ctx, "hoarder", id, sku, 1)
			if err == nil {
				mu.Lock()
				won = append(won, id)
				mu.Unlock()
				return
			}
			if flashsale.ErrorCode(err) != flashsale.LimitExceeded {
				t.Errorf("order %s: %v", id, err)
			}
		})
	}
	wg.Wait()
	require.Len(t, won, 3)
	require.EqualValues(t, 97, stock(t, s, sku).Available)
	require.Equal(t, Allowance{Limit: 3, Held: 3}, held(t, s, sku, "hoarder"))

	// A retried reserve replays its answer and counts nothing more.
	r, err := s.ReserveFor(ctx, "hoarder", won[0], sku, 1)
	require.NoError(t, err)
	require.EqualValues(t, 1, r.Quantity)
	require.Equal(t, Allowance{Limit: 3, Held: 3}, held(t, s, sku, "hoarder"))
	require.EqualValues(t, 97, stock(t, s, sku).Available)

	// Another buyer is not affected by the hoarder's count.
	_, err = s.ReserveFor(ctx, "other", "other-1", sku, 3)
	require.NoError(t, err)
	require.Equal(t, Allowance{Limit: 3, Held: 3}, held(t, s, sku, "other"))

	// A release gives the allowance back, a retried release does not again.
	n, err := s.Release(ctx, won[0], sku)
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
	require.Equal(t, Allowance{Limit: 3, Held: 2}, held(t, s, sku, "hoarder"))
	_, err = s.Release(ctx, won[0], sku)
	require.NoError(t, err)
	require.Equal(t, Allowance{Limit: 3, Held: 2}, held(t, s, sku, "hoarder"))
	// A late retry of the released order counts nothing.
	_, err = s.ReserveFor(ctx, "hoarder", won[0], sku, 1)
	requireCode(t, err, flashsale.AlreadyReleased)
	require.Equal(t, Allowance{Limit: 3, Held: 2}, held(t, s, sku, "hoarder"))
	// The unit given back may be bought again, and no more.
	_, err = s.ReserveFor(ctx, "hoarder", "again", sku, 1)
	require.NoError(t, err)
	_, err = s.ReserveFor(ctx, "hoarder", "again-2", sku, 1)
	requireCode(t, err, flashsale.LimitExceeded)
	require.Equal(t, Allowance{Limit: 3, Held: 3}, held(t, s, sku, "hoarder"))

	// A Release that ran before the order's Reserve leaves a tombstone:
	// the late Reserve counts nothing.
	_, err = s.Release(ctx, "early", sku)
	require.NoError(t, err)
	_, err = s.ReserveFor(ctx, "fresh", "early", sku, 1)
	requireCode(t, err, flashsale.AlreadyReleased)
	require.Equal(t, Allowance{Limit: 3}, held(t, s, sku, "fresh"))

	// A new sale (the SKU PUT again) starts every buyer from zero; a release
	// of the old sale's order does not take from the new count.
	require.NoError(t, s.SetLimit(ctx, sku, 3, 2000))
	require.Equal(t, Allowance{Limit: 3}, held(t, s, sku, "hoarder"))
	_, err = s.ReserveFor(ctx, "hoarder", "sale2-1", sku, 3)
	require.NoError(t, err)
	_, err = s.Release(ctx, won[1], sku)
	require.NoError(t, err)
	require.Equal(t, Allowance{Limit: 3, Held: 3}, held(t, s, sku, "hoarder"))
}

// An order that ends sold out gives its count back with its units.
func TestLimitSoldOutGivesBack(t *testing.T) {
	s, rdb := newStore(t)
	ctx := context.Background()
	sku := newSKU(t, rdb)
	require.NoError(t, s.SetLimit(ctx, sku, 5, 1000))
	_, err := s.Preheat(ctx, sku, 1, 4)
	require.NoError(t, err)

	_, err = s.ReserveFor(ctx, "u", "short", sku, 2)
	requireCode(t, err, flashsale.SoldOut)
	require.Equal(t, Allowance{Limit: 5}, held(t, s, sku, "u"))
	// Its retry repeats sold out and counts nothing.
	_, err = s.ReserveFor(ctx, "u", "short", sku, 2)
	requireCode(t, err, flashsale.SoldOut)
	require.Equal(t, Allowance{Limit: 5}, held(t, s, sku, "u"))
	require.EqualValues(t, 1, stock(t, s, sku).Available)

	// A SKU Redis knows no limit of counts nothing (MySQL alone checks).
	bare := newSKU(t, rdb)
	_, err = s.Preheat(ctx, bare, 10, 2)
	require.NoError(t, err)
	_, err = s.ReserveFor(ctx, "u", "bare-1", bare, 10)
	require.NoError(t, err)
	require.Equal(t, Allowance{}, held(t, s, bare, "u"))
}

// A waitlist hand-over moves the count with the units: the released order's
// buyer gets it back, the receiving buyer is counted, and a receiving buyer
// at the limit is refused while the units go back on open sale.
func TestLimitTransfer(t *testing.T) {
	s, rdb := newStore(t)
	ctx := context.Background()
	sku := newSKU(t, rdb)
	require.NoError(t, s.SetLimit(ctx, sku, 1, 1000))
	_, err := s.Preheat(ctx, sku, 3, 2)
	require.NoError(t, err)

	_, err = s.ReserveFor(ctx, "a", "a-1", sku, 1)
	require.NoError(t, err)
	_, err = s.TransferTo(ctx, "b", "a-1", "wl-a-1", sku, 1)
	require.NoError(t, err)
	require.Equal(t, Allowance{Limit: 1}, held(t, s, sku, "a"))
	require.Equal(t, Allowance{Limit: 1, Held: 1}, held(t, s, sku, "b"))
	// A retried hand-over changes nothing.
	_, err = s.TransferTo(ctx, "b", "a-1", "wl-a-1", sku, 1)
	require.NoError(t, err)
	require.Equal(t, Allowance{Limit: 1, Held: 1}, held(t, s, sku, "b"))
	require.Equal(t, Allowance{Limit: 1}, held(t, s, sku, "a"))

	// b holds the limit: the next hand-over to b still moves the unit
	// (MySQL refuses the offer, whose compensation hands it on to the next
	// waiting buyer), counted for b past the limit until then.
	_, err = s.ReserveFor(ctx, "c", "c-1", sku, 1)
	require.NoError(t, err)
	require.EqualValues(t, 1, stock(t, s, sku).Available)
	_, err = s.TransferTo(ctx, "b", "c-1", "wl-c-1", sku, 1)
	require.NoError(t, err)
	require.EqualValues(t, 1, stock(t, s, sku).Available, "the released unit stays off open sale")
	require.Equal(t, Allowance{Limit: 1}, held(t, s, sku, "c"))
	require.Equal(t, Allowance{Limit: 1, Held: 2}, held(t, s, sku, "b"))
	_, err = s.TransferTo(ctx, "d", "wl-c-1", "wl-wl-c-1", sku, 1)
	require.NoError(t, err, "the refused offer's unit goes on to the next buyer")
	require.Equal(t, Allowance{Limit: 1, Held: 1}, held(t, s, sku, "b"))
	require.Equal(t, Allowance{Limit: 1, Held: 1}, held(t, s, sku, "d"))
	require.EqualValues(t, 1, stock(t, s, sku).Available)

	// Releasing the receiving order gives b's allowance back.
	_, err = s.Release(ctx, "wl-a-1", sku)
	require.NoError(t, err)
	require.Equal(t, Allowance{Limit: 1}, held(t, s, sku, "b"))
}
