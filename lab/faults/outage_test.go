//go:build faults

package faults

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/flashsale/flashsale"
)

// TestRedisUnreachable is case 4: Redis stops answering for 10 s in the
// middle of the sale (SIGSTOP: connections stay open and hang, the harshest
// outage for clients). Buyers keep being served by MySQL alone; when Redis
// answers again the degraded orders' SKU is re-synced from MySQL before
// Redis is used again, and the sale ends with nothing oversold or lost.
func TestRedisUnreachable(t *testing.T) {
	const outage = 10 * time.Second
	var before, during int64
	runCase(t, caseSpec{
		name: "4 redis unreachable 10s (degrade, recover)", units: 20, buyers: 80,
		inject: func(ctx context.Context, sl *sale) {
			sl.waitReserved(ctx, 4)
			before = sl.c.Reserved.Load()
			sl.t.Logf("redis unreachable for %s with %d reserved", outage, before)
			sl.fault()
			sl.s.redis.freeze(outage)
			during = sl.c.Reserved.Load() - before
			sl.t.Logf("redis answers again; %d reservations made while it did not", during)
		},
		beforeC: func(ctx context.Context, sl *sale) {
			// The resync must finish and clear the flag; settleAndCheck
			// then requires Redis to equal MySQL.
			var flag int64
			ok := waitFor(ctx, 2*time.Minute, func() bool {
				flag = sl.s.mysqlInt(ctx, "SELECT redis_resync FROM inventory WHERE sku_id = ?", sl.sku)
				return flag == 0
			})
			if !ok {
				sl.t.Errorf("redis resync flag still %d", flag)
			}
		},
		after: func(ctx context.Context, sl *sale) {
			degraded := sl.s.mysqlInt(ctx, "SELECT COUNT(*) FROM orders WHERE degraded = 1")
			m := sl.s.metrics()
			sl.t.Logf("orders reserved in mysql alone: %d; api requests decided without redis: %d; reservations during the outage: %d",
				degraded, m.Edge.Degraded, during)
			if degraded == 0 || during == 0 {
				sl.t.Errorf("the outage served nobody: %d degraded orders, %d reservations during it", degraded, during)
			}
			if m.Edge.Degraded == 0 {
				sl.t.Errorf("the api never degraded")
			}
			if sl.t.Failed() {
				sl.s.explainRedis(ctx, sl.sku)
				return
			}
			// Back on Redis: a unit restocked now is reserved through Redis
			// again, by the edge and by the worker (a probe let through by
			// each process's guard closed it).
			if _, err := sl.s.restock(sl.sku, "after-outage-"+sl.s.id, 1); err != nil {
				sl.t.Fatalf("restock: %v", err)
			}
			c := newCrowd(sl.s.baseURL(), sl.sku, 1, 1)
			rng := rand.New(rand.NewPCG(1, 2))
			key, buyer := "after-outage-"+sl.s.id, "late-buyer-"+sl.s.id
			// The order's id is derived from the buyer's key.
			orderID := flashsale.BuyerOrderID(buyer, key)
			var status int
			waitFor(ctx, 30*time.Second, func() bool {
				status, _, _ = c.Place(ctx, rng, buyer, key)
				return status == http.StatusCreated
			})
			if status != http.StatusCreated {
				sl.t.Fatalf("the restocked unit was not sold after the outage: last answer %d", status)
			}
			if d := sl.s.mysqlInt(ctx, "SELECT degraded FROM orders WHERE order_id = ?", orderID); d != 0 {
				sl.t.Errorf("an order placed after the resync was still reserved in mysql alone")
			}
			held, err := sl.s.redisHeld(ctx, sl.sku, orderID)
			if err != nil {
				sl.t.Fatalf("read redis markers: %v", err)
			}
			if held != 1 {
				sl.t.Errorf("the order after the outage holds %d units in redis, want 1", held)
			}
		},
	})
}

// mysqlInt runs a query answering one integer on the stack's database.
func (s *stack) mysqlInt(ctx context.Context, query string, args ...any) int64 {
	s.t.Helper()
	var n int64
	if err := s.db.QueryRowContext(ctx, query, args...).Scan(&n); err != nil {
		s.t.Fatalf("%s: %v", query, err)
	}
	return n
}

// apiMetrics is the part of GET /metrics the suite reads.
type apiMetrics struct {
	Edge struct {
		Degraded int64 `json:"degraded"`
	} `json:"edge"`
}

// metrics reads the current API's counters (since its start).
func (s *stack) metrics() apiMetrics {
	s.t.Helper()
	resp, err := http.Get(s.baseURL() + "/metrics")
	if err != nil {
		s.t.Fatalf("metrics: %v", err)
	}
	defer resp.Body.Close()
	var m apiMetrics
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		s.t.Fatalf("decode metrics: %v", err)
	}
	return m
}

// explainRedis logs, for a failed case, every order holding units in Redis
// with its MySQL state, and the worker's degradation and resync lines.
func (s *stack) explainRedis(ctx context.Context, sku string) {
	deps, closeDeps, err := s.deps(ctx)
	if err != nil {
		s.t.Logf("explain: %v", err)
		return
	}
	defer closeDeps()
	held, err := deps.Stock.HeldByOrder(ctx, sku)
	if err != nil {
		s.t.Logf("explain: %v", err)
		return
	}
	db, err := s.dbOrders(ctx)
	if err != nil {
		s.t.Logf("explain: %v", err)
		return
	}
	degraded := map[string]bool{}
	if rows, err := s.db.QueryContext(ctx, "SELECT order_id FROM orders WHERE degraded = 1"); err == nil {
		for rows.Next() {
			var id string
			_ = rows.Scan(&id)
			degraded[id] = true
		}
		_ = rows.Close()
	}
	for id, units := range held {
		s.t.Logf("redis marker: order %s holds %d; mysql %+v (present %v), degraded %v", id, units, db[id], db[id] != (orderRow{}), degraded[id])
	}
	for _, line := range strings.Split(s.logBuffer("worker").Tail(100000), "\n") {
		if strings.Contains(line, "re-synced") || strings.Contains(line, "mysql alone") || strings.Contains(line, "drift") {
			s.t.Logf("worker: %s", line)
		}
	}
}

// redisHeld is what an order's Redis markers hold for sku.
func (s *stack) redisHeld(ctx context.Context, sku, orderID string) (int64, error) {
	deps, closeDeps, err := s.deps(ctx)
	if err != nil {
		return 0, err
	}
	defer closeDeps()
	held, err := deps.Stock.HeldByOrder(ctx, sku)
	return held[orderID], err
}
