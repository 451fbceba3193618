// Package edge is the load-shedding gate in front of the order workflow.
//
// A flash sale is a million requests for a thousand units, and the narrow
// pipe is the Temporal server: every request that reaches it costs a
// workflow, however quickly that workflow says "sold out". The gate answers
// as many requests as it can before that, cheapest first:
//
//  1. In-process sold-out cache: no network at all. Set when this instance
//     saw the SKU empty; dropped on every instance within milliseconds by
//     the Redis Pub/Sub message every stock increase publishes
//     (inventory.StockChangedChannel), and expiring by itself after LocalTTL
//     in case a message is lost.
//  2. Full admission window (see 5), also known in process: 429 BUSY.
//  3. Per-user rate limit (Redis, shared by all instances): the first layer
//     that costs a network call, so every later one is bounded per user.
//  4. Redis sold-out flag: read in the same MGET as the SKU's bucket count
//     and generation (one slot), so it costs no round trip of its own;
//     when set, the buckets are not read.
//  5. Admission: at most MaxInFlight units of a SKU may be on their way
//     through Temporal from this instance, and never more than Redis still
//     holds. Everything else is answered at once: 429 BUSY (retry) while
//     units remain, 409 SOLD_OUT when none do. So the number of workflows
//     started grows with the stock, not with the requests.
//
// A request that repeats a client-chosen order id already placed skips 1, 2,
// 4 and 5 (one GET finds it): it must get its first answer, not a new
// shedding decision.
//
// Only then is the order placed (Update-with-Start). Redis's Reserve and
// MySQL stay the judges of every unit; the gate only decides who may ask,
// and a wrong sold-out hint is always short-lived: it can delay a buyer,
// never keep one from stock that is there for longer than a Pub/Sub
// round trip.
//
// # Redis down
//
// When Redis cannot be reached (Options.Guard open, or a call of this
// request met an outage), the gate degrades instead of failing closed,
// provided it has Options.DBAvailable: the in-process sold-out cache still
// answers first; then a per-SKU window of DegradedMaxInFlight units (far
// smaller than MaxInFlight: every admitted order now lands on MySQL's hot
// row) answers BUSY when full; then MySQL's available units (one read per
// SKU at a time, shared by the requests waiting for it) decide SOLD_OUT,
// which the cache remembers for LocalTTL. The rate limit and the
// placed-order markers live in Redis and are skipped; a repeated order id
// still attaches to its workflow in Temporal. The order itself is then
// reserved in MySQL alone by the worker (activities/degraded.go).
package edge

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/flashsale/flashsale"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/singleflight"

	"github.com/flashsale/flashsale/internal/inventory"
	"github.com/flashsale/flashsale/internal/redisguard"
)

// Errors Admit returns. RetryError wraps ErrBusy and ErrRateLimited.
var (
	// ErrSoldOut: the SKU has no units left for this order.
	ErrSoldOut error = &flashsale.Error{Code: flashsale.SoldOut, Message: "sold out"}
	// ErrUnknownSKU: the SKU is not on sale (never preheated).
	ErrUnknownSKU error = &flashsale.Error{Code: flashsale.UnknownSKU, Message: "unknown sku"}
	// ErrBusy: units remain, but enough orders for them are already in
	// flight; retry shortly.
	ErrBusy error = &flashsale.Error{Code: flashsale.Busy, Message: "busy"}
	// ErrRateLimited: the user sent more buy requests than allowed.
	ErrRateLimited error = &flashsale.Error{Code: flashsale.RateLimited, Message: "rate limited"}
	// ErrIDConflict: the client-chosen order id belongs to another user.
	ErrIDConflict error = &flashsale.Error{Code: flashsale.OrderIDConflict, Message: "order id used by another user"}
	// ErrUnavailable: Redis did not answer; the gate fails closed, because
	// an unguarded edge would let the whole flood through to Temporal.
	ErrUnavailable error = &flashsale.Error{Code: flashsale.Unavailable, Message: "edge unavailable"}
)

// RetryError says when a shed request may be retried.
type RetryError struct {
	Err   error // ErrBusy or ErrRateLimited
	After time.Duration
}

func (e *RetryError) Error() string { return fmt.Sprintf("%v: retry after %v", e.Err, e.After) }
func (e *RetryError) Unwrap() error { return e.Err }

// Defaults for Options fields left zero.
const (
	// DefaultMaxInFlight bounds the units of one SKU on their way through
	// Temporal from one instance. Update-with-Start takes ~35 ms on an idle
	// dev server, so 16 in flight is a few hundred orders a second, more
	// than the dev server's ~50 workflows/s; a larger window only queues
	// inside Temporal and lengthens every buyer's wait.
	DefaultMaxInFlight = 16
	// DefaultBuyRate is buy requests per second per user, across instances.
	DefaultBuyRate = 5
	// DefaultLocalTTL is the in-process sold-out cache's safety net for a
	// lost Pub/Sub message: short, because a wrong entry turns buyers away.
	DefaultLocalTTL = time.Second
	// DefaultBusyRetryAfter is the Retry-After given with ErrBusy. Retry-After
	// has whole seconds; one second is the least it can say.
	DefaultBusyRetryAfter = time.Second
	// DefaultPlacedTTL is how long an order id is remembered as placed, so a
	// repeat skips shedding and gets its first answer. It matches the
	// inventory markers' lifetime (inventory.DefaultHeldTTL).
	DefaultPlacedTTL = 24 * time.Hour
	// DefaultDegradedMaxInFlight: without Redis every admitted order
	// takes MySQL's row lock for its SKU; a few at a time keep it busy
	// without a queue of held connections behind it.
	DefaultDegradedMaxInFlight = 8
)

// Options tune the gate. Zero values take the defaults above.
type Options struct {
	MaxInFlight    int64
	BuyRate        int
	LocalTTL       time.Duration
	BusyRetryAfter time.Duration
	PlacedTTL      time.Duration
	Logger         *slog.Logger

	// Guard tells whether Redis is reachable; nil means always try it.
	Guard *redisguard.Guard
	// DBAvailable reads a SKU's available units from MySQL, for the
	// degraded path; it must wrap ErrUnknownSKU for a SKU MySQL does not
	// know. Nil disables degradation: with Redis down the gate fails
	// closed (ErrUnavailable).
	DBAvailable func(ctx context.Context, sku string) (int64, error)
	// DegradedMaxInFlight bounds the units of one SKU on their way from
	// this instance while Redis is down.
	DegradedMaxInFlight int64
}

func (o Options) withDefaults() Options {
	if o.MaxInFlight <= 0 {
		o.MaxInFlight = DefaultMaxInFlight
	}
	if o.BuyRate <= 0 {
		o.BuyRate = DefaultBuyRate
	}
	if o.LocalTTL <= 0 {
		o.LocalTTL = DefaultLocalTTL
	}
	if o.BusyRetryAfter <= 0 {
		o.BusyRetryAfter = DefaultBusyRetryAfter
	}
	if o.PlacedTTL <= 0 {
		o.PlacedTTL = DefaultPlacedTTL
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.DegradedMaxInFlight <= 0 {
		o.DegradedMaxInFlight = DefaultDegradedMaxInFlight
	}
	return o
}

// Item is one order line as the gate sees it.
type Item struct {
	SKU      string
	Quantity int64
}

// Request is a buy request that has passed input validation.
type Request struct {
	OrderID string
	// ClientOrderID is true when the buyer chose the order id, so the
	// request may repeat an order already placed.
	ClientOrderID bool
	UserID        string
	Items         []Item
}

// Gate is the load-shedding gate. It is safe for concurrent use; Run must be
// running for the in-process cache to hear about stock changes.
type Gate struct {
	rdb     redis.UniversalClient
	stock   *inventory.Store
	limiter *redis_rate.Limiter
	opts    Options

	cache    *soldOutCache
	inflight *inflight
	// degraded is the admission window while Redis is down, and dbReads
	// collapses concurrent MySQL reads of one SKU into one.
	degraded *inflight
	dbReads  singleflight.Group
	stats    counters
	// subscribed is true while Run holds a live stock-change subscription.
	subscribed atomic.Bool
}

// New returns a gate on rdb (for the rate limit, the placed-order markers
// and Pub/Sub) and stock (the sold-out flag and bucket sums).
func New(rdb redis.UniversalClient, stock *inventory.Store, opts Options) *Gate {
	opts = opts.withDefaults()
	return &Gate{
		rdb:      rdb,
		stock:    stock,
		limiter:  redis_rate.NewLimiter(rdb),
		opts:     opts,
		cache:    newSoldOutCache(opts.LocalTTL),
		inflight: newInflight(),
		degraded: newInflight(),
	}
}

// placedKey marks an order id as placed; its value is the buyer's user id.
func placedKey(orderID string) string { return "fs:placed:" + orderID }

// rateKey is a user's budget for one kind of request (redis_rate prefixes
// "rate:"): buys and waitlist joins are counted apart, so queueing does not
// cost a buyer their next buy.
func rateKey(scope, userID string) string { return "fs:" + scope + ":" + userID }

// Rate-limit scopes.
const (
	scopeBuy = "buy"
	// ScopeWaitlist counts waitlist joins (see RateLimit).
	ScopeWaitlist = "waitlist"
)

// Ticket is an admitted request. Done must be called once the order's
// placement has answered, to give its in-flight units back.
type Ticket struct {
	g     *Gate
	items []Item
	// window holds the ticket's units: the gate's window, or its degraded
	// one (Degraded).
	window *inflight
	// Degraded is true when Redis was down: the request was admitted on
	// MySQL's available units.
	Degraded bool
	// Duplicate is true when the order id had been placed before: the
	// request goes to Temporal for its first answer and starts nothing.
	Duplicate bool
	done      atomic.Bool
}

// Admit decides whether req may go on to place its order. It returns a
// Ticket, or one of the errors above (wrapped). It never blocks on other
// requests: everything it cannot admit now is answered at once.
func (g *Gate) Admit(ctx context.Context, req Request) (*Ticket, error) {
	g.stats.requests.Add(1)
	items := slices.Clone(req.Items)
	// Sorted, so multi-item requests take per-SKU slots in one order.
	slices.SortFunc(items, func(a, b Item) int { return strings.Compare(a.SKU, b.SKU) })

	done, ok := g.opts.Guard.Allow()
	if !ok && g.opts.DBAvailable != nil {
		return g.admitDegraded(ctx, items)
	}
	t, err := g.admitRedis(ctx, req, items)
	if err != nil && ctx.Err() != nil {
		// The buyer hung up mid-call: the failure is theirs, and says
		// nothing about Redis (a dial cut short reads like a network
		// error). Neither the guard nor the degraded path hears of it.
		done(nil)
		return nil, fmt.Errorf("admit order %s: %w", req.OrderID, context.Cause(ctx))
	}
	done(err)
	if errors.Is(err, ErrUnavailable) && g.opts.DBAvailable != nil {
		// Whatever this request did in Redis before it failed (a window
		// slot, a placed marker) was undone or is harmless.
		return g.admitDegraded(ctx, items)
	}
	return t, err
}

// admitRedis is Admit while Redis answers: the layers of the package
// comment.
func (g *Gate) admitRedis(ctx context.Context, req Request, items []Item) (*Ticket, error) {
	// A repeat of a placed order must get its first answer, whatever the
	// stock says now: it bypasses the shedding layers (not the rate
	// limit). Only client-chosen ids can be repeats, so server-made ids
	// skip this read.
	if req.ClientOrderID {
		owner, err := g.rdb.Get(ctx, placedKey(req.OrderID)).Result()
		switch {
		case err == nil:
			return g.duplicate(ctx, req, owner)
		case !errors.Is(err, redis.Nil):
			return nil, g.unavailable(ctx, fmt.Errorf("read placed marker of order %s: %w", req.OrderID, err))
		}
	}

	if err := g.shedLocal(items, g.inflight, g.opts.MaxInFlight); err != nil {
		return nil, err
	}
	if err := g.RateLimit(ctx, scopeBuy, req.UserID); err != nil {
		return nil, err
	}

	return g.admit(ctx, req, items)
}

// shedLocal answers what this instance knows without the network: a SKU
// cached as sold out, or a window already full for one of the items. At the
// height of a sale most requests end here; the binding check is the
// window's admit.
func (g *Gate) shedLocal(items []Item, window *inflight, limit int64) error {
	now := time.Now()
	for _, it := range items {
		if g.cache.soldOut(it.SKU, now) {
			g.stats.soldOutLocal.Add(1)
			return fmt.Errorf("sku %s: %w (local cache)", it.SKU, ErrSoldOut)
		}
	}
	for _, it := range items {
		if window.full(it.SKU, it.Quantity, limit) {
			return g.busy()
		}
	}
	return nil
}

func (g *Gate) duplicate(ctx context.Context, req Request, owner string) (*Ticket, error) {
	if owner != req.UserID {
		g.stats.idConflicts.Add(1)
		return nil, fmt.Errorf("order %s: %w", req.OrderID, ErrIDConflict)
	}
	if err := g.RateLimit(ctx, scopeBuy, req.UserID); err != nil {
		return nil, err
	}
	g.stats.duplicates.Add(1)
	return &Ticket{g: g, window: g.inflight, Duplicate: true}, nil
}

// RateLimit spends one of userID's requests of scope (shared by every
// instance through Redis, at the buy rate): a RetryError wrapping
// ErrRateLimited when none is left, ErrUnavailable when Redis did not
// answer.
func (g *Gate) RateLimit(ctx context.Context, scope, userID string) error {
	res, err := g.limiter.Allow(ctx, rateKey(scope, userID), redis_rate.PerSecond(g.opts.BuyRate))
	if err != nil {
		return g.unavailable(ctx, fmt.Errorf("rate limit: %w", err))
	}
	if res.Allowed == 0 {
		g.stats.rateLimited.Add(1)
		return &RetryError{Err: ErrRateLimited, After: res.RetryAfter}
	}
	return nil
}

// admit is the last layer: per-SKU in-flight slots sized by what Redis
// still holds.
//
// A request reads the SKU's units, THEN, under the window's lock, is
// admitted only if the units already admitted and still in flight plus its
// own fit into what it read (and into MaxInFlight). Every unit counted in
// flight either has not been reserved yet (so it is still in Redis and is
// owed to that request) or has been (so it is gone from Redis and counted
// twice, which errs on the side of BUSY). So on one instance the admitted
// requests never ask for more than Redis has: workflows started ~= units
// sold. Each further instance can add at most MaxInFlight per SKU to that.
//
// Only admitted requests hold a slot. An earlier version took the slot
// before the read; under a flood the requests merely probing then filled
// the window, and near the end of a sale (few units left, many probes)
// every request saw itself behind the probes and was told BUSY forever.
func (g *Gate) admit(ctx context.Context, req Request, items []Item) (*Ticket, error) {
	t := &Ticket{g: g, window: g.inflight}
	if err := t.take(ctx, items, g.admitItem); err != nil {
		return nil, err
	}

	// Remember the id before the order exists, so a repeat sent while the
	// first is still in flight already skips shedding and attaches to the
	// same workflow. SET NX GET tells in one round trip whether another
	// request got there first.
	prev, err := g.rdb.SetArgs(ctx, placedKey(req.OrderID), req.UserID,
		redis.SetArgs{Mode: "NX", TTL: g.opts.PlacedTTL, Get: true}).Result()
	switch {
	case errors.Is(err, redis.Nil):
	case err != nil:
		t.release()
		return nil, g.unavailable(ctx, fmt.Errorf("write placed marker of order %s: %w", req.OrderID, err))
	default:
		// A concurrent repeat of the same id won; it starts the workflow.
		t.release()
		return g.duplicate(ctx, req, prev)
	}
	g.stats.admitted.Add(1)
	return t, nil
}

// admitItem reads what Redis holds for one item and asks the window. A
// read made stale by a request finishing meanwhile is repeated a few times;
// under a flood that keeps happening, the answer is BUSY.
func (g *Gate) admitItem(ctx context.Context, it Item) (admission, error) {
	for range 3 {
		seen := g.inflight.releases(it.SKU)
		tok := g.cache.token(time.Now())
		av, err := g.stock.Available(ctx, it.SKU)
		if errors.Is(err, inventory.ErrUnknownSKU) {
			g.stats.unknownSKU.Add(1)
			return 0, fmt.Errorf("sku %s: %w", it.SKU, ErrUnknownSKU)
		}
		if err != nil {
			return 0, g.unavailable(ctx, err)
		}
		if av.SoldOut {
			// The Redis flag, read in the same round trip as the stock.
			g.cache.set(it.SKU, tok, time.Now())
			g.stats.soldOutRedis.Add(1)
			return 0, fmt.Errorf("sku %s: %w (redis flag)", it.SKU, ErrSoldOut)
		}
		if av.Units == 0 {
			g.observedEmpty(ctx, it.SKU, tok, av.Gen)
			g.stats.soldOutStock.Add(1)
			return 0, fmt.Errorf("sku %s: %w", it.SKU, ErrSoldOut)
		}
		// Nobody else in flight and too few units is a plain "not enough
		// left", not an empty SKU: no sold-out hint is recorded.
		if res := g.inflight.admit(it.SKU, it.Quantity, av.Units, g.opts.MaxInFlight, seen); res != stale {
			return res, nil
		}
	}
	return busy, nil
}

// admitDegraded admits a request while Redis is down (see "Redis down" in
// the package comment): sold-out cache, degraded window, MySQL's units.
func (g *Gate) admitDegraded(ctx context.Context, items []Item) (*Ticket, error) {
	g.stats.degraded.Add(1)
	if err := g.shedLocal(items, g.degraded, g.opts.DegradedMaxInFlight); err != nil {
		return nil, err
	}
	t := &Ticket{g: g, window: g.degraded, Degraded: true}
	if err := t.take(ctx, items, g.admitDegradedItem); err != nil {
		return nil, err
	}
	g.stats.admitted.Add(1)
	return t, nil
}

// admitDegradedItem is admitItem with MySQL's available units in place of
// Redis's buckets.
func (g *Gate) admitDegradedItem(ctx context.Context, it Item) (admission, error) {
	for range 3 {
		seen := g.degraded.releases(it.SKU)
		tok := g.cache.token(time.Now())
		units, err := g.dbAvailable(ctx, it.SKU)
		if errors.Is(err, ErrUnknownSKU) {
			g.stats.unknownSKU.Add(1)
			return 0, fmt.Errorf("sku %s: %w", it.SKU, ErrUnknownSKU)
		}
		if err != nil {
			return 0, g.unavailable(ctx, err)
		}
		if units == 0 {
			g.cache.set(it.SKU, tok, time.Now())
			g.stats.soldOutStock.Add(1)
			return 0, fmt.Errorf("sku %s: %w (mysql)", it.SKU, ErrSoldOut)
		}
		if res := g.degraded.admit(it.SKU, it.Quantity, units, g.opts.DegradedMaxInFlight, seen); res != stale {
			return res, nil
		}
	}
	return busy, nil
}

// dbReadTimeout bounds the shared MySQL read of the degraded path.
const dbReadTimeout = 2 * time.Second

// doneTimeout bounds Done's re-read of SKUs answered sold out.
const doneTimeout = 2 * time.Second

// dbAvailable reads MySQL's available units of sku; concurrent callers
// share one read.
func (g *Gate) dbAvailable(ctx context.Context, sku string) (int64, error) {
	v, err, _ := g.dbReads.Do(sku, func() (any, error) {
		// Shared by every caller waiting: it must not die with the first
		// caller's request.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), dbReadTimeout)
		defer cancel()
		return g.opts.DBAvailable(rctx, sku)
	})
	if err != nil {
		return 0, err
	}
	return v.(int64), nil
}

func (g *Gate) busy() error {
	g.stats.busy.Add(1)
	return &RetryError{Err: ErrBusy, After: g.opts.BusyRetryAfter}
}

// unavailable marks err as Redis (or MySQL) not answering, unless the
// request's own context ended: a buyer who hung up is not an outage.
func (g *Gate) unavailable(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return err
	}
	g.stats.unavailable.Add(1)
	return fmt.Errorf("%w: %w", ErrUnavailable, err)
}

// observedEmpty records that sku was read with zero units at generation gen
// (token tok taken before the read): in this instance's cache, and in the
// Redis flag so other instances stop at their layer 3. Both refuse a stale
// observation, so a unit that came back meanwhile stays visible.
func (g *Gate) observedEmpty(ctx context.Context, sku string, tok token, gen int64) {
	g.cache.set(sku, tok, time.Now())
	if _, err := g.stock.MarkSoldOut(ctx, sku, gen); err != nil {
		// Only a hint; the next reader sees the empty buckets itself.
		g.opts.Logger.Warn("set sold-out flag", "sku_id", sku, "error", err)
	}
}

// Done gives the ticket's in-flight units back. soldOut reports that the
// order was rejected as sold out: the gate then reads each SKU and, if it is
// really empty, caches that, so the next buyers stop at the first layer.
// That read is detached from ctx's cancellation (the buyer may have gone;
// the answer is for the next ones) and bounded by doneTimeout. Calling Done
// more than once is harmless.
func (t *Ticket) Done(ctx context.Context, soldOut bool) {
	if t == nil || !t.done.CompareAndSwap(false, true) {
		return
	}
	t.release()
	if !soldOut {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), doneTimeout)
	defer cancel()
	if t.Degraded {
		for _, it := range t.items {
			tok := t.g.cache.token(time.Now())
			units, err := t.g.dbAvailable(ctx, it.SKU)
			if err == nil && units == 0 {
				t.g.cache.set(it.SKU, tok, time.Now())
			}
		}
		return
	}
	for _, it := range t.items {
		tok := t.g.cache.token(time.Now())
		av, err := t.g.stock.Available(ctx, it.SKU)
		if err != nil {
			t.g.opts.Logger.Warn("read stock after sold-out answer", "sku_id", it.SKU, "error", err)
			continue
		}
		switch {
		case av.SoldOut:
			t.g.cache.set(it.SKU, tok, time.Now())
		case av.Units == 0:
			t.g.observedEmpty(ctx, it.SKU, tok, av.Gen)
		}
	}
}

// take asks the ticket's window for every item through admitOne, all or
// nothing: on the first refusal it gives back what it took and returns the
// answer for the buyer.
func (t *Ticket) take(ctx context.Context, items []Item, admitOne func(context.Context, Item) (admission, error)) error {
	for _, it := range items {
		res, err := admitOne(ctx, it)
		if err != nil {
			t.release()
			return err
		}
		switch res {
		case admitted:
			t.items = append(t.items, it)
		case tooFew:
			t.release()
			t.g.stats.soldOutStock.Add(1)
			return fmt.Errorf("sku %s: %d wanted, fewer left: %w", it.SKU, it.Quantity, ErrSoldOut)
		default:
			t.release()
			return t.g.busy()
		}
	}
	return nil
}

func (t *Ticket) release() {
	for _, it := range t.items {
		t.window.release(it.SKU, it.Quantity)
	}
}

// Run listens for stock changes and drops the matching sold-out entries
// until ctx ends. While it is not subscribed the cache only trusts entries
// younger than LocalTTL; every (re)subscription clears the whole cache,
// because messages may have been missed in between.
func (g *Gate) Run(ctx context.Context) error {
	ps := g.rdb.Subscribe(ctx, inventory.StockChangedChannel)
	// Receive does not watch ctx; closing the subscription unblocks it.
	stop := context.AfterFunc(ctx, func() { _ = ps.Close() })
	defer stop()
	defer ps.Close()
	defer g.subscribed.Store(false)

	go func() {
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case now := <-tick.C:
				g.cache.prune(now)
			}
		}
	}()

	backoff := 50 * time.Millisecond
	for {
		msg, err := ps.Receive(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			g.subscribed.Store(false)
			g.cache.reset()
			g.opts.Logger.Warn("stock-change subscription", "error", err, "retry_in", backoff)
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, 2*time.Second)
			continue
		}
		backoff = 50 * time.Millisecond
		switch m := msg.(type) {
		case *redis.Subscription:
			g.cache.reset()
			g.subscribed.Store(true)
		case *redis.Message:
			g.stats.stockChanges.Add(1)
			g.cache.changed(m.Payload, time.Now())
		}
	}
}

// Stats are the gate's counters since start.
type Stats struct {
	Requests int64 `json:"requests"`
	// Admitted requests went on to start their order's workflow.
	Admitted int64 `json:"admitted"`
	// Duplicates repeated a placed order id and went to Temporal for its
	// first answer without starting anything.
	Duplicates   int64 `json:"duplicates"`
	SoldOutLocal int64 `json:"shed_sold_out_local"`
	SoldOutRedis int64 `json:"shed_sold_out_redis"`
	SoldOutStock int64 `json:"shed_sold_out_stock"`
	Busy         int64 `json:"shed_busy"`
	RateLimited  int64 `json:"rate_limited"`
	UnknownSKU   int64 `json:"unknown_sku"`
	IDConflicts  int64 `json:"id_conflicts"`
	Unavailable  int64 `json:"unavailable"`
	// Degraded requests were decided without Redis (it was down).
	Degraded     int64 `json:"degraded"`
	StockChanges int64 `json:"stock_changes_heard"`
	// Subscribed is true while the stock-change subscription is live.
	Subscribed       bool  `json:"subscribed"`
	InFlightUnits    int64 `json:"in_flight_units"`
	LocalSoldOutSKUs int   `json:"local_sold_out_skus"`
}

type counters struct {
	requests, admitted, duplicates                 atomic.Int64
	soldOutLocal, soldOutRedis, soldOutStock, busy atomic.Int64
	rateLimited, unknownSKU, idConflicts           atomic.Int64
	unavailable, stockChanges, degraded            atomic.Int64
}

// Stats returns a snapshot of the counters.
func (g *Gate) Stats() Stats {
	c := &g.stats
	return Stats{
		Requests: c.requests.Load(), Admitted: c.admitted.Load(), Duplicates: c.duplicates.Load(),
		SoldOutLocal: c.soldOutLocal.Load(), SoldOutRedis: c.soldOutRedis.Load(), SoldOutStock: c.soldOutStock.Load(),
		Busy: c.busy.Load(), RateLimited: c.rateLimited.Load(), UnknownSKU: c.unknownSKU.Load(),
		IDConflicts: c.idConflicts.Load(), Unavailable: c.unavailable.Load(), StockChanges: c.stockChanges.Load(),
		Degraded:      c.degraded.Load(),
		Subscribed:    g.subscribed.Load(),
		InFlightUnits: g.inflight.total(), LocalSoldOutSKUs: g.cache.size(time.Now()),
	}
}
