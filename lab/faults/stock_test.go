//go:build faults

package faults

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flashsale/flashsale/internal/inventory"
	"github.com/flashsale/flashsale/lab/crowd"
)

// Case 8: stock changes under load. The SKU's buckets grow early in the
// sale; the SKU sells out; a restock (sent twice with one restock id)
// brings units back, which the buyers turned away as sold out must get;
// the buckets shrink while they buy; the restock's id is sent once more
// after the shrink (a different bucket count, so a different bucket); the
// SKU sells out again; a second restock arrives three times at once.
// Every restocked unit must be sold, and a repeated restock id must add
// nothing, in MySQL or in Redis.
const (
	stockInitial  = 20
	stockRestock1 = 15
	stockRestock2 = 10
)

func TestStockChanges(t *testing.T) {
	var (
		soldAtRestock     int64 // MySQL sold when the first restock landed
		reservedAtRestock int64
		idA, idB          string
	)
	runCase(t, caseSpec{
		name: "8 restock, bucket resize, sold-out flag under load", units: stockInitial, buyers: 160,
		crowd: func(c *crowd.Crowd) {
			// The crowd buys until every unit, restocked ones included,
			// is paid, so nothing a restock added is left unsold.
			c.Units = stockInitial + stockRestock1 + stockRestock2
			c.Deadline = 3 * time.Minute
		},
		inject: func(ctx context.Context, sl *sale) {
			rdb := redis.NewClient(&redis.Options{Addr: sl.s.redis.addr()})
			defer rdb.Close()
			stock := inventory.New(rdb, inventory.Options{})
			idA, idB = "restock-a-"+sl.s.id, "restock-b-"+sl.s.id

			sl.waitReserved(ctx, 3)
			sl.resize(32)

			// Sold out: every initial unit paid, none held, and the flag
			// set by buyers who found the buckets empty.
			if !sl.waitPaid(ctx, stockInitial) {
				return
			}
			sl.waitFlag(ctx, stock, true, 15*time.Second)
			soldAtRestock = sl.s.skuInventory(sl.sku).Sold
			reservedAtRestock = sl.c.Reserved.Load()
			restockAt := time.Now()
			sl.restock(idA, stockRestock1, true)
			if st, err := stock.Stock(ctx, sl.sku); err != nil {
				sl.t.Errorf("read stock after restock: %v", err)
			} else if st.SoldOut {
				sl.t.Errorf("sold-out flag still set after the restock (redis available %d)", st.Available)
			}
			sl.restock(idA, stockRestock1, false) // an admin's re-click
			if !waitFor(ctx, 10*time.Second, func() bool { return sl.c.Reserved.Load() > reservedAtRestock }) {
				sl.t.Errorf("no reservation within 10s of the restock (reserved %d)", sl.c.Reserved.Load())
				return
			}
			sl.t.Logf("first reservation %s after the restock", time.Since(restockAt).Round(time.Millisecond))

			// Shrink while the restocked units are being bought, then
			// repeat the restock under the new bucket count.
			sl.waitReserved(ctx, reservedAtRestock+4)
			sl.resize(2)
			sl.restock(idA, stockRestock1, false)

			if !sl.waitPaid(ctx, stockInitial+stockRestock1) {
				return
			}
			sl.waitFlag(ctx, stock, true, 15*time.Second)
			// A job retried by three workers at once.
			var wg sync.WaitGroup
			added := make(chan bool, 3)
			for range 3 {
				wg.Go(func() {
					a, err := sl.s.restock(sl.sku, idB, stockRestock2)
					if err != nil {
						sl.t.Errorf("restock %s: %v", idB, err)
						return
					}
					added <- a.Added
				})
			}
			wg.Wait()
			close(added)
			n := 0
			for a := range added {
				if a {
					n++
				}
				sl.fault()
			}
			sl.t.Logf("restock %s of %d sent three times at once with %d reserved: %d answered added",
				idB, stockRestock2, sl.c.Reserved.Load(), n)
			if n != 1 {
				sl.t.Errorf("three concurrent restocks with restock id %s: %d answered added, want 1", idB, n)
			}
		},
		beforeC: func(ctx context.Context, sl *sale) {
			inv := sl.s.skuInventory(sl.sku)
			want := int64(stockInitial + stockRestock1 + stockRestock2)
			sl.t.Logf("after the sale: mysql total %d sold %d db_available %d frozen %d; sold after the first restock %d, reservations after it %d",
				inv.Total, inv.Sold, inv.DBAvailable, inv.Frozen, inv.Sold-soldAtRestock, sl.c.Reserved.Load()-reservedAtRestock)
			if inv.Total != want {
				sl.t.Errorf("mysql total %d, want %d (initial %d + restocks %d and %d, each once)",
					inv.Total, want, stockInitial, stockRestock1, stockRestock2)
			}
			if inv.Sold-soldAtRestock <= 0 {
				sl.t.Errorf("no unit sold after the first restock")
			}
			// MySQL refuses units Redis has and it has not (a restock
			// added twice in Redis only), so the checker's totals stay
			// right; the drift counter is where such units show.
			rdb := redis.NewClient(&redis.Options{Addr: sl.s.redis.addr()})
			defer rdb.Close()
			st, err := inventory.New(rdb, inventory.Options{}).Stock(ctx, sl.sku)
			if err != nil {
				sl.t.Errorf("read redis stock: %v", err)
			} else if st.Drift != 0 {
				sl.t.Errorf("redis handed out %d units mysql refused (drift counter)", st.Drift)
			}
		},
	})
}

// resize changes the SKU's bucket count through the admin API.
func (sl *sale) resize(buckets int) {
	out := sl.s.admin(http.MethodPost, "/api/v1/admin/skus/"+sl.sku+"/buckets", map[string]any{"buckets": buckets})
	sl.fault()
	sl.t.Logf("buckets resized to %d with %d reserved: %v", buckets, sl.c.Reserved.Load(), out)
	if out["buckets"] != float64(buckets) {
		sl.t.Errorf("resize to %d answered %v", buckets, out)
	}
}

// restock adds qty units with restock id id and checks whether the answer
// says they were added now (wantAdded) or before.
func (sl *sale) restock(id string, qty int64, wantAdded bool) {
	a, err := sl.s.restock(sl.sku, id, qty)
	if err != nil {
		sl.t.Errorf("restock %s: %v", id, err)
		return
	}
	sl.fault()
	sl.t.Logf("restock %s of %d with %d reserved: added %v, mysql total %d, db_available %d",
		id, qty, sl.c.Reserved.Load(), a.Added, a.Total, a.DBAvailable)
	if a.Added != wantAdded || !a.OnSale {
		sl.t.Errorf("restock %s: added %v on_sale %v, want added %v on sale", id, a.Added, a.OnSale, wantAdded)
	}
}

// waitPaid waits until the crowd has paid for n units; false if the sale
// ended first.
func (sl *sale) waitPaid(ctx context.Context, n int64) bool {
	if waitFor(ctx, 2*time.Minute, func() bool { return sl.c.Paid.Load() >= n || sl.c.SoldOut.Load() }) && sl.c.Paid.Load() >= n {
		return true
	}
	sl.t.Errorf("the crowd paid %d units, waited for %d", sl.c.Paid.Load(), n)
	return false
}

// waitFlag waits until the Redis sold-out flag is set (or cleared).
func (sl *sale) waitFlag(ctx context.Context, stock *inventory.Store, set bool, timeout time.Duration) {
	var st inventory.Stock
	ok := waitFor(ctx, timeout, func() bool {
		var err error
		st, err = stock.Stock(ctx, sl.sku)
		return err == nil && st.SoldOut == set
	})
	if !ok {
		sl.t.Errorf("sold-out flag not %v within %s: %+v", set, timeout, st)
		return
	}
	sl.t.Logf("sold-out flag %v with redis available %d in %d buckets", set, st.Available, st.Buckets)
}

// restockAnswer is the admin restock endpoint's answer.
type restockAnswer struct {
	Added       bool  `json:"added"`
	Total       int64 `json:"total"`
	DBAvailable int64 `json:"db_available"`
	OnSale      bool  `json:"on_sale"`
}

// restock calls the admin restock endpoint. It returns its error, so it
// may run off the test goroutine.
func (s *stack) restock(sku, requestID string, qty int64) (restockAnswer, error) {
	var a restockAnswer
	err := s.adminCall(http.MethodPost, "/api/v1/admin/skus/"+sku+"/restock",
		map[string]any{"quantity": qty, "restock_id": requestID}, &a)
	return a, err
}

// inventoryAnswer is GET /api/v1/inventory/{sku}.
type inventoryAnswer struct {
	Total       int64 `json:"total"`
	DBAvailable int64 `json:"db_available"`
	Frozen      int64 `json:"frozen"`
	Sold        int64 `json:"sold"`
}

// skuInventory reads sku as MySQL has it, now: with the admin token, which
// skips the public answer's one-second cache.
func (s *stack) skuInventory(sku string) inventoryAnswer {
	s.t.Helper()
	req, err := http.NewRequest(http.MethodGet, s.baseURL()+"/api/v1/inventory/"+sku, nil)
	if err != nil {
		s.t.Fatalf("read inventory: %v", err)
	}
	req.Header.Set("Authorization", "Bearer "+adminToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatalf("read inventory: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var a inventoryAnswer
	if resp.StatusCode != http.StatusOK || json.Unmarshal(b, &a) != nil {
		s.t.Fatalf("read inventory: %s %s", resp.Status, b)
	}
	return a
}
