//go:build integration

package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Flood parameters: the 20,000 buy requests for 100 units.
const (
	floodUnits    = 100
	floodRequests = 20_000
	floodClients  = 400
)

// TestFlood sends 20,000 buy requests from 400 concurrent clients, each
// request a different buyer, for 100 units. Exactly 100 are reserved, no
// unit is oversold, and the workflows started stay near the stock (at most
// 200) however many requests come: the edge answers the rest with 409 or
// 429 without touching Temporal.
func TestFlood(t *testing.T) {
	s := newStack(t, stackOptions{})
	api := s.api
	sku := s.name("flood")
	api.putSKU(sku, floodUnits, 100, 16, 1)

	var (
		next    atomic.Int64
		mu      sync.Mutex
		answers = map[string]int{} // "201", "409 SOLD_OUT", ...
		errs    []error
		wg      sync.WaitGroup
		// soldOutAt is when the last unit was reserved.
		soldOutAt time.Duration
		// unavailable counts 503 answers, each retried.
		unavailable atomic.Int64
	)
	start := time.Now()
	for range floodClients {
		wg.Go(func() {
			for {
				n := next.Add(1)
				if n > floodRequests {
					return
				}
				orderID, buyer := s.name(fmt.Sprintf("f%d", n)), s.name(fmt.Sprintf("buyer%d", n))
				status, code, retryAfter, err := floodBuy(t.Context(), api, orderID, buyer, sku)
				// 503 says "retry": a dependency did not answer in time
				// (seen on a machine loaded by other work). The client
				// retries the same order id, which gets the order's first
				// answer and never a second unit.
				for attempt := 0; err == nil && status == http.StatusServiceUnavailable && attempt < 20; attempt++ {
					unavailable.Add(1)
					time.Sleep(max(retryAfter, 500*time.Millisecond))
					status, code, retryAfter, err = floodBuy(t.Context(), api, orderID, buyer, sku)
				}
				mu.Lock()
				if err != nil {
					errs = append(errs, err)
				} else {
					answers[fmt.Sprintf("%d %s", status, code)]++
				}
				if status == http.StatusCreated {
					soldOutAt = time.Since(start)
				}
				mu.Unlock()
				// A polite client: after a 429 it waits at least
				// Retry-After, plus up to as much again so the clients do
				// not come back in lockstep. One that retried at once
				// would spend the 20,000 requests before the Temporal dev
				// server (~50 orders/s, far less under -race) placed 100.
				if status == http.StatusTooManyRequests {
					time.Sleep(retryAfter + rand.N(retryAfter+1))
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	require.Empty(t, errs)

	m := api.metrics()
	inv := api.inventory(sku)
	db := s.dbInventory(sku)
	keys := make([]string, 0, len(answers))
	for k := range answers {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	t.Logf("%d requests from %d clients for %d units in %v (last unit reserved after %v)",
		floodRequests, floodClients, floodUnits, elapsed.Round(time.Millisecond), soldOutAt.Round(time.Millisecond))
	for _, k := range keys {
		t.Logf("  %-22s %6d", k, answers[k])
	}
	t.Logf("503 answers retried with the same order id: %d", unavailable.Load())
	t.Logf("workflows started: %d; edge: %+v", m.WorkflowsStarted, m.Edge)
	t.Logf("inventory: %+v", inv)

	require.Equal(t, floodUnits, answers["201 "], "every unit sold, none twice")
	total := 0
	for k, n := range answers {
		// A 503 that stayed one through every retry is an order that was
		// rejected as UNAVAILABLE (nothing reserved): its buyer would use a
		// new order id. The 100 units still went to exactly 100 201s.
		require.Contains(t, []string{"201 ", "409 SOLD_OUT", "429 BUSY", "503 UNAVAILABLE"}, k, "no other answer")
		total += n
	}
	require.Equal(t, floodRequests, total)

	// Exactly 100 reservations, in MySQL (the final guard) and Redis.
	require.Equal(t, inventoryOut{SKU: sku, Total: floodUnits, Available: 0, DBAvailable: 0, Frozen: floodUnits,
		IsSoldOut: true, BucketCount: 16}, inv)
	require.Equal(t, int64(floodUnits), db.Frozen)
	require.Zero(t, db.Available)
	require.Zero(t, db.Sold)

	// The workflows started grow with the stock, not the requests.
	require.LessOrEqual(t, m.WorkflowsStarted, int64(2*floodUnits))
	require.GreaterOrEqual(t, m.WorkflowsStarted, int64(floodUnits))
	require.Equal(t, m.Edge.Admitted, m.WorkflowsStarted)
	// Temporal's own count agrees (visibility lags: poll).
	var visible int64
	require.Eventually(t, func() bool {
		visible = s.countWorkflows(sku)
		return visible == m.WorkflowsStarted
	}, 30*time.Second, 250*time.Millisecond, "visibility counts %d order workflows for the SKU, the API started %d", visible, m.WorkflowsStarted)
	t.Logf("Temporal visibility: %d order workflows with SkuIds = '%s'", visible, sku)
}

// floodBuy is one buyer's request, without test assertions so it can run on
// any goroutine. It returns the status, the error code and Retry-After.
func floodBuy(ctx context.Context, in *instance, orderID, user, sku string) (int, string, time.Duration, error) {
	body := fmt.Appendf(nil, `{"client_order_id":%q,"user_id":%q,"items":[{"sku_id":%q,"quantity":1}]}`, orderID, user, sku)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, in.url+"/api/v1/orders", bytes.NewReader(body))
	if err != nil {
		return 0, "", 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header["Authorization"] = buyerHeader(in.t, user)["Authorization"]
	resp, err := in.client.Do(req)
	if err != nil {
		return 0, "", 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, "", 0, err
	}
	if resp.StatusCode == http.StatusCreated {
		return resp.StatusCode, "", 0, nil
	}
	var e struct{ Code string }
	if err := json.Unmarshal(b, &e); err != nil {
		return 0, "", 0, fmt.Errorf("status %d, body %q: %w", resp.StatusCode, b, err)
	}
	var retryAfter time.Duration
	if v := resp.Header.Get("Retry-After"); v != "" {
		secs, err := strconv.Atoi(v)
		if err != nil || secs < 1 {
			return 0, "", 0, fmt.Errorf("status %d with Retry-After %q", resp.StatusCode, v)
		}
		retryAfter = time.Duration(secs) * time.Second
	}
	if resp.StatusCode == http.StatusTooManyRequests && retryAfter == 0 {
		return 0, "", 0, fmt.Errorf("429 %s without Retry-After", e.Code)
	}
	return resp.StatusCode, e.Code, retryAfter, nil
}
