package activities

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"golang.org/x/sync/semaphore"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/activities/contract"
)

// Redis-down degradation.
//
// Redis is the fast pre-deduction in front of MySQL, not the guard against
// overselling: CreateOrder's conditional UPDATE is. So when Redis cannot be
// reached, an order is reserved in MySQL alone ("degraded"): ReserveStock
// takes nothing and says so, and CreateOrder runs under a per-worker
// concurrency cap, because without Redis in front every buyer's order
// reaches the SKU's hot row.
//
// Redis then no longer knows which units are gone, so it must not be used
// for the SKU again until it has been re-synced from MySQL. A degraded
// order flags its SKUs in MySQL (inventory.redis_resync, bumped in the
// transaction that moves the units, on create and again on close) and asks
// for a resync (RequestResync: the resync workflow, see
// Reconciler.ResyncStock). While a SKU is flagged, ReserveStock keeps it
// MySQL-only even when Redis answers; the resync clears the flag with a
// compare-and-set once Redis matches MySQL, and buyers are back on Redis.

// DefaultDegradedConcurrency caps the CreateOrder calls one worker runs
// without Redis in front. They queue on one row lock per SKU anyway; more
// only holds more MySQL connections waiting.
const DefaultDegradedConcurrency = 8

// DefaultResyncFlagTTL is how long a SKU's resync flag is cached. A stale
// answer is harmless either way: using Redis while a SKU is flagged only
// takes units the resync counts as in flight, and a needless degraded order
// only flags the SKU again.
const DefaultResyncFlagTTL = 500 * time.Millisecond

func (a *Activities) resyncFlagTTL() time.Duration {
	if a.ResyncFlagTTL > 0 {
		return a.ResyncFlagTTL
	}
	return DefaultResyncFlagTTL
}

// degradation holds the per-worker state of degraded reservations.
type degradation struct {
	once  sync.Once
	slots *semaphore.Weighted

	mu    sync.Mutex
	flags map[string]cachedFlag
}

type cachedFlag struct {
	pending bool
	at      time.Time
}

func (a *Activities) slots() *semaphore.Weighted {
	a.degraded.once.Do(func() {
		n := a.DegradedConcurrency
		if n <= 0 {
			n = DefaultDegradedConcurrency
		}
		a.degraded.slots = semaphore.NewWeighted(int64(n))
	})
	return a.degraded.slots
}

// mustDegrade reports whether an order for items has to be reserved in
// MySQL alone although Redis may answer: a SKU is flagged for a resync.
// Whether Redis answers is guardedReserve's question: asking the guard
// here would keep a worker degraded for good, because only a call let
// through by the guard (its probe) can close it again.
func (a *Activities) mustDegrade(ctx context.Context, items []flashsale.Item) (bool, string, error) {
	skus := make([]string, 0, len(items))
	now := time.Now()
	a.degraded.mu.Lock()
	for _, it := range items {
		f, ok := a.degraded.flags[it.SKU]
		switch {
		case ok && now.Sub(f.at) < a.resyncFlagTTL():
			if f.pending {
				a.degraded.mu.Unlock()
				return true, "redis resync pending for " + it.SKU, nil
			}
		default:
			skus = append(skus, it.SKU)
		}
	}
	a.degraded.mu.Unlock()
	if len(skus) == 0 {
		return false, "", nil
	}
	pending, err := a.Orders.ResyncPending(ctx, skus)
	if err != nil {
		return false, "", err
	}
	a.degraded.mu.Lock()
	defer a.degraded.mu.Unlock()
	if a.degraded.flags == nil {
		a.degraded.flags = make(map[string]cachedFlag)
	}
	// Entries of SKUs not looked up for a while are dropped here, so the
	// map does not grow with every SKU ever sold.
	for sku, f := range a.degraded.flags {
		if now.Sub(f.at) > time.Minute {
			delete(a.degraded.flags, sku)
		}
	}
	var flagged string
	for _, sku := range skus {
		a.degraded.flags[sku] = cachedFlag{pending: pending[sku] > 0, at: now}
		if pending[sku] > 0 && flagged == "" {
			flagged = sku
		}
	}
	if flagged != "" {
		return true, "redis resync pending for " + flagged, nil
	}
	return false, "", nil
}

// forgetFlags drops the cached flags of skus: this worker just flagged
// them, and its next order must not use Redis on an older answer.
func (a *Activities) forgetFlags(skus []string) {
	a.degraded.mu.Lock()
	defer a.degraded.mu.Unlock()
	for _, sku := range skus {
		delete(a.degraded.flags, sku)
	}
}

// errRedisDown is guardedReserve's answer when the guard knows Redis is
// down: nothing was asked.
var errRedisDown = errors.New("redis unreachable")

// guardedReserve is reserveItem behind the guard.
func (a *Activities) guardedReserve(ctx context.Context, in contract.ReserveStockInput, it flashsale.Item) (flashsale.Reservation, error) {
	done, ok := a.Guard.Allow()
	if !ok {
		return flashsale.Reservation{}, errRedisDown
	}
	res, err := a.reserveItem(ctx, in, it)
	done(err)
	return res, err
}

// requestResync asks for each SKU's Redis buckets to be re-synced from
// MySQL. Repeating it is harmless (the resync of a clear flag does
// nothing), so it runs after every degraded move, retries included.
func (a *Activities) requestResync(ctx context.Context, skus []string) error {
	a.forgetFlags(skus)
	if a.RequestResync == nil {
		return fmt.Errorf("request redis resync of %v: no RequestResync configured", skus)
	}
	skus = slices.Clone(skus)
	slices.Sort(skus)
	for _, sku := range slices.Compact(skus) {
		if err := a.RequestResync(ctx, sku); err != nil {
			return fmt.Errorf("request redis resync of %s: %w", sku, err)
		}
	}
	return nil
}
