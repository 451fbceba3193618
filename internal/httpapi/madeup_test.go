//go:build integration

package httpapi_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMadeUpSKUsCostNothing is issue 21's defect 3: one token sends 20-item
// orders naming one SKU cached as sold out and 19 names it made up, ~350k
// names in all (in-process through the real handler, on the real stack).
// The API's heap stays flat (within 10 MB after GC), no made-up name
// reaches the per-SKU gauges, and the real SKUs' gauges are still there.
// On 73799bf every name was noted and answered SOLD_OUT before the rate
// limit: the heap grew by tens of MB, and the 16 gauge slots went to the
// attacker's names.
func TestMadeUpSKUsCostNothing(t *testing.T) {
	s := newStack(t, stackOptions{localTTL: time.Hour})
	api := s.api
	onSale, gone := s.name("on-sale"), s.name("gone")
	api.putSKU(onSale, 10, 100, 2, 1)
	api.putSKU(gone, 1, 100, 1, 1)
	require.Equal(t, http.StatusCreated, api.buy("", s.name("first"), gone, 1).status)
	r := api.buy("", s.name("second"), gone, 1)
	require.Equal(t, http.StatusConflict, r.status, "%s", r.body)
	require.Equal(t, "SOLD_OUT", r.code(t))
	reg := prometheus.NewRegistry()
	require.NoError(t, api.server.RegisterMetrics(reg))

	const (
		orders  = 18500 // x 19 made-up names = 351,500
		workers = 2
	)
	handler := api.server.Handler()
	auth := buyerHeader(t, s.name("mallory"))
	prefix := s.name("madeup")
	body := func(n int) []byte {
		items := []map[string]any{{"sku_id": gone, "quantity": 1}}
		for j := range 19 {
			items = append(items, map[string]any{"sku_id": fmt.Sprintf("%s-%08d-%02d", prefix, n, j), "quantity": 1})
		}
		return mustJSON(t, map[string]any{"items": items})
	}

	before, rssBefore := heapAfterGC(), rssKB(t)
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		codes = map[string]int{}
	)
	start := time.Now()
	for w := range workers {
		wg.Go(func() {
			seen := map[string]int{}
			for n := w; n < orders; n += workers {
				req := httptest.NewRequest(http.MethodPost, "/api/v1/orders", bytes.NewReader(body(n)))
				req.Header = auth.Clone()
				req.Header.Set("Content-Type", "application/json")
				rec := httptest.NewRecorder()
				handler.ServeHTTP(rec, req)
				var e struct{ Code string }
				_ = json.Unmarshal(rec.Body.Bytes(), &e)
				seen[strconv.Itoa(rec.Code)+" "+e.Code]++
			}
			mu.Lock()
			defer mu.Unlock()
			for k, v := range seen {
				codes[k] += v
			}
		})
	}
	wg.Wait()
	took := time.Since(start)
	after, rssAfter := heapAfterGC(), rssKB(t)
	t.Logf("%d orders, %d made-up names in %v: answers %v; heap %.1f -> %.1f MB, RSS %.1f -> %.1f MB",
		orders, orders*19, took.Round(time.Millisecond), codes, mb(before), mb(after), float64(rssBefore)/1024, float64(rssAfter)/1024)
	for k := range codes {
		require.True(t, strings.HasPrefix(k, "409 SOLD_OUT") || strings.HasPrefix(k, "429 RATE_LIMITED"), "answer %q", k)
	}
	// Not fatal: the gauges below are checked whatever the heap did.
	assert.Less(t, int64(after)-int64(before), int64(10<<20), "heap grew by %.1f MB", mb(after)-mb(before))

	families, err := reg.Gather()
	require.NoError(t, err)
	skus := map[string]bool{}
	for _, f := range families {
		if f.GetName() != "flashsale_sku_redis_available_units" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "sku" {
					skus[l.GetValue()] = true
				}
			}
		}
	}
	require.True(t, skus[onSale], "the SKU on sale keeps its gauges: %v", skus)
	require.True(t, skus[gone], "the sold-out SKU keeps its gauges: %v", skus)
	for sku := range skus {
		require.False(t, strings.HasPrefix(sku, prefix), "made-up sku %s in the gauges", sku)
	}
	require.Equal(t, float64(10), promValue(t, reg, "flashsale_sku_redis_available_units", map[string]string{"sku": onSale}))
	// The rate limit applies before the cached sold-out SKU answers: at most
	// the buy rate's share of them (a burst of 5, then 5 a second) was
	// answered SOLD_OUT.
	allowed := 5 * (2 + int(took/time.Second))
	require.LessOrEqual(t, codes["409 SOLD_OUT"], allowed, "%v", codes)
	// What starter check runs: no invariant broken by anything above.
	s.checkClean(onSale, gone)
}

func heapAfterGC() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

func mb(b uint64) float64 { return float64(b) / (1 << 20) }

// rssKB is this process's resident set (VmRSS), for the log.
func rssKB(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	require.NoError(t, err)
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			require.NoError(t, err)
			return n
		}
	}
	t.Fatal("no VmRSS in /proc/self/status")
	return 0
}
