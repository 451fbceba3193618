//go:build integration

package httpapi_test

import (
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Passes are bounded by the placement capacity the API instances publish
// (each its share, SALE_PASSES_PER_INSTANCE, here 2 as its per-SKU window),
// and a pass holder is let past the window: 10 buyers on two instances, 8
// units; every buyer looks and buys with a pass as soon as it holds one,
// all at once. No look ever shows
// more than 4 passes outstanding (2 + 2), no pass holder is told 429 BUSY,
// exactly 8 buyers get a 201, the other 2 are told sold out (by queue/me,
// or by their buy when a buy in flight took the unit, and then by
// queue/me too: the pass that bought nothing is given back), and MySQL
// holds exactly 8 units taken: nothing oversold.
func TestFairSalePassHoldersBoundedByCapacityNeverBusy(t *testing.T) {
	s := newStack(t, stackOptions{maxInFlight: 2, salePasses: 2})
	other := s.newInstance(s.connect())
	sku := s.name("capacity")
	s.api.putSKU(sku, 8, 100, 2, 1)
	s.startSale(sku, time.Now().Add(time.Hour), 0)
	users := s.enterQueue(sku, "c", 10)
	require.Equal(t, http.StatusOK, s.api.control(sku, "open").status)

	var created, soldOut, busy, over atomic.Int64
	var mu sync.Mutex
	maxOut := 0.0
	var wg sync.WaitGroup
	for i, u := range users {
		in := []*instance{s.api, other}[i%2]
		wg.Go(func() {
			deadline := time.Now().Add(60 * time.Second)
			for time.Now().Before(deadline) {
				p := in.place(sku, u)
				out, _ := p["outstanding"].(float64)
				mu.Lock()
				maxOut = max(maxOut, out)
				mu.Unlock()
				if out > 4 {
					over.Add(1)
					t.Errorf("%v passes outstanding, capacity 4", out)
				}
				if p["sold_out"] == true {
					soldOut.Add(1)
					return
				}
				pass, _ := p["pass"].(string)
				if pass == "" {
					time.Sleep(250 * time.Millisecond)
					continue
				}
				r := in.buyWithPass("k", u, sku, pass)
				switch {
				case r.status == http.StatusCreated:
					created.Add(1)
					return
				case r.status == http.StatusConflict && r.code(t) == "SOLD_OUT":
					// Told by the buy itself: the units read before this
					// holder's pass went out were taken by buys in flight
					// (passes <= units left + cap). The pass bought
					// nothing, so it was given back: queue/me tells the
					// sell-out too, not pass_spent.
					soldOut.Add(1)
					after := in.place(sku, u)
					assert.Equal(t, true, after["sold_out"], "%s after its buy was answered SOLD_OUT: %v", u, after)
					assert.Nil(t, after["pass_spent"], "%s: its pass bought nothing", u)
					return
				case r.status == http.StatusTooManyRequests && r.code(t) == "BUSY":
					busy.Add(1)
					t.Errorf("pass holder %s told BUSY: %s", u, r.body)
				default:
					t.Logf("%s: %d %s (place %v)", u, r.status, r.body, p)
				}
				time.Sleep(250 * time.Millisecond)
			}
			t.Errorf("%s neither bought nor was told sold out", u)
		})
	}
	wg.Wait()
	require.Zero(t, over.Load())
	require.Zero(t, busy.Load())
	require.Equal(t, int64(8), created.Load())
	require.Equal(t, int64(2), soldOut.Load())
	require.LessOrEqual(t, maxOut, 4.0)
	inv := s.dbInventory(sku)
	require.Equal(t, int64(8), inv.Frozen+inv.Sold, "eight units taken, none oversold")
	require.Equal(t, http.StatusOK, s.api.control(sku, "close").status)
}
