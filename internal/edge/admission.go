package edge

// Admission while Redis answers: the layers of docs/design/edge.md in the
// order they cost, each refusing as early and as cheaply as it can.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/internal/inventory"
	"github.com/flashsale/flashsale/internal/redisguard"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
)

// Admit decides whether req may go on to place its order. It returns a
// Ticket, or one of the errors above (wrapped). It never blocks on other
// requests: everything it cannot admit now is answered at once.
func (g *Gate) Admit(ctx context.Context, req Request) (*Ticket, error) {
	g.stats.requests.Add(1)
	items := slices.Clone(req.Items)
	// Sorted, so multi-item requests take per-SKU slots in one order.
	slices.SortFunc(items, func(a, b flashsale.Item) int { return strings.Compare(a.SKU, b.SKU) })

	done, ok := g.opts.Guard.Allow()
	if !ok && g.opts.DBAvailable != nil {
		return g.admitDegraded(ctx, items)
	}
	t, err := g.admitRedis(ctx, req, items)
	// A deadline met waiting for a Redis connection is answered below, as
	// any exhausted pool is: BUSY, not the buyer's own doing.
	if err != nil && ctx.Err() != nil && !redisguard.IsOverload(err) {
		// The buyer hung up mid-call: the failure is theirs, and says
		// nothing about Redis (a dial cut short reads like a network
		// error). Neither the guard nor the degraded path hears of it.
		done(nil)
		return nil, fmt.Errorf("admit order %s: %w", req.OrderID, context.Cause(ctx))
	}
	done(err)
	if _, told := errors.AsType[*RetryError](err); redisguard.IsOverload(err) && !told {
		// A store's BUSY (inventory.Store on an exhausted pool): the same
		// answer, with the same Retry-After, as the gate's own.
		return nil, g.overloaded(err)
	}
	if flashsale.ErrorCode(err) == flashsale.Unavailable && g.opts.DBAvailable != nil {
		// Whatever this request did in Redis before it failed (a window
		// slot, a placed marker) was undone or is harmless.
		return g.admitDegraded(ctx, items)
	}
	return t, err
}

// admitRedis is Admit while Redis answers: the layers of the package
// comment.
func (g *Gate) admitRedis(ctx context.Context, req Request, items []flashsale.Item) (*Ticket, error) {
	// A repeat of a placed order must get its first answer, whatever the
	// stock says now: it bypasses the shedding layers (not the rate
	// limit). Only client-chosen ids can be repeats, so server-made ids
	// skip this read.
	if req.ClientOrderID {
		owner, err := g.PlacedBy(ctx, req.OrderID)
		switch {
		case err != nil:
			return nil, err
		case owner != "":
			return g.duplicate(ctx, req, owner)
		}
	}

	// A request of one item is shed locally before the rate limit, the
	// cheapest answer at the height of a sale. One of several items is
	// rate limited first: otherwise one cached sold-out SKU among names
	// made up by the client would have any number of those names answered
	// without a Redis round trip, at no cost to the client's budget.
	if len(items) > 1 {
		if err := g.RateLimit(ctx, scopeBuy, req.UserID); err != nil {
			return nil, err
		}
	}
	if err := g.shedLocal(items, g.inflight, g.opts.MaxInFlight, req.Pass); err != nil {
		return nil, err
	}
	if len(items) == 1 {
		if err := g.RateLimit(ctx, scopeBuy, req.UserID); err != nil {
			return nil, err
		}
	}

	return g.admit(ctx, req, items)
}

// shedLocal answers what this instance knows without the network: a SKU
// cached as sold out, or a window already full for one of the items. At the
// height of a sale most requests end here; the binding check is the
// window's admit. A pass holder (Request.Pass) is refused only as sold out.
func (g *Gate) shedLocal(items []flashsale.Item, window *inflight, limit int64, pass bool) error {
	now := time.Now()
	for _, it := range items {
		if g.cache.soldOut(it.SKU, now) {
			g.stats.soldOutLocal.Add(1)
			return decidedBy(it.SKU, fmt.Errorf("sku %s: %w (local cache)", it.SKU, flashsale.Errorf(flashsale.SoldOut, "sold out")))
		}
	}
	if pass {
		return nil
	}
	for _, it := range items {
		if window.full(it.SKU, it.Quantity, limit) {
			return decidedBy(it.SKU, g.busy())
		}
	}
	// Only new orders come here (repeats returned before), and each needs
	// a placement permit: none left is BUSY now, not after the stock read.
	// Only for SKUs this window has admitted before, so that a name made
	// up by the client is still answered UNKNOWN_SKU, not BUSY.
	if p := g.opts.Placements; p != nil && !slices.ContainsFunc(items, func(it flashsale.Item) bool { return !window.known(it.SKU) }) {
		if err := p.Check(); err != nil {
			g.stats.busy.Add(1)
			return err
		}
	}
	return nil
}

func (g *Gate) duplicate(ctx context.Context, req Request, owner string) (*Ticket, error) {
	if owner != req.UserID {
		g.stats.idConflicts.Add(1)
		return nil, fmt.Errorf("order %s: %w", req.OrderID, flashsale.Errorf(flashsale.OrderIDConflict, "order id used by another user"))
	}
	if err := g.RateLimit(ctx, scopeBuy, req.UserID); err != nil {
		return nil, err
	}
	g.stats.duplicates.Add(1)
	return &Ticket{g: g, window: g.inflight, Duplicate: true}, nil
}

// RateLimit spends one of userID's requests of scope (shared by every
// instance through Redis, at the buy rate): a RetryError wrapping
// a RateLimited error when none is left, Unavailable when Redis did not
// answer.
func (g *Gate) RateLimit(ctx context.Context, scope, userID string) error {
	res, err := g.limiter.Allow(ctx, rateKey(scope, userID), redis_rate.PerSecond(g.opts.BuyRate))
	if err != nil {
		return g.unavailable(ctx, fmt.Errorf("rate limit: %w", err))
	}
	if res.Allowed == 0 {
		g.stats.rateLimited.Add(1)
		return &RetryError{Err: flashsale.Errorf(flashsale.RateLimited, "rate limited"), After: res.RetryAfter}
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
func (g *Gate) admit(ctx context.Context, req Request, items []flashsale.Item) (*Ticket, error) {
	t := &Ticket{g: g, window: g.inflight}
	limit := g.opts.MaxInFlight
	if req.Pass {
		// The serving counter bounds the pass holders (Request.Pass):
		// only the stock read bounds them here.
		limit = math.MaxInt64
	}
	admitOne := func(ctx context.Context, it flashsale.Item) (itemAdmission, error) {
		return g.admitItem(ctx, req.UserID, it, limit)
	}
	// The window before the permit: a sold-out SKU is answered SOLD_OUT
	// by its stock read, never BUSY because the requests reading it at
	// the same moment held every permit. shedLocal has already refused
	// what the limit would, so a give-back of the window here is rare.
	if err := t.take(ctx, items, admitOne); err != nil {
		return nil, err
	}
	if req.Pass {
		// A permit if one is free, so the placement counts in the limit's
		// view; none is no refusal (the holders are bounded by the
		// capacity their instances published, see Request.Pass).
		if !t.holdIfFree() {
			g.stats.passOverLimit.Add(1)
		}
	} else if err := t.hold(); err != nil {
		t.release()
		return nil, err
	}

	// Remember the id before the order exists, so a repeat sent while the
	// first is still in flight already skips shedding and attaches to the
	// same workflow. SET NX GET tells in one round trip whether another
	// request got there first.
	// The id joins each SKU's set of placed ids in the same round trip
	// (QuickAnswer's snapshot), before any unit is taken. A lost race adds
	// the same id again, harmlessly.
	pipe := g.rdb.Pipeline()
	set := pipe.SetArgs(ctx, placedKey(req.OrderID), req.UserID,
		redis.SetArgs{Mode: "NX", TTL: g.opts.PlacedTTL, Get: true})
	var adds []redis.Cmder
	for _, it := range items {
		adds = append(adds, pipe.SAdd(ctx, placedSetKey(it.SKU), req.OrderID), pipe.Expire(ctx, placedSetKey(it.SKU), g.opts.PlacedTTL))
	}
	_, _ = pipe.Exec(ctx)
	prev, err := set.Result()
	for _, c := range adds {
		if err == nil || errors.Is(err, redis.Nil) {
			if cerr := c.Err(); cerr != nil {
				// An order missing from the set would be answered
				// SOLD_OUT on a repeat: it must not be placed.
				err = cerr
			}
		}
	}
	switch {
	case errors.Is(err, redis.Nil):
	case err != nil:
		t.Placed(false)
		t.release()
		return nil, g.unavailable(ctx, fmt.Errorf("write placed marker of order %s: %w", req.OrderID, err))
	default:
		// A concurrent repeat of the same id won; it starts the workflow.
		t.Placed(false)
		t.release()
		return g.duplicate(ctx, req, prev)
	}
	g.stats.admitted.Add(1)
	return t, nil
}

// admitItem reads what Redis holds for one item, and what the buyer may
// still hold of it, and asks the window. The read also says when the SKU
// takes its unit (inventory.Availability.Deduct).
func (g *Gate) admitItem(ctx context.Context, userID string, it flashsale.Item, limit int64) (itemAdmission, error) {
	return g.admitFrom(ctx, it, g.inflight, limit, stockSource{
		read: func(ctx context.Context, sku string) (stockRead, error) {
			av, err := g.stock.AvailableTo(ctx, sku, userID)
			return stockRead{units: av.Units, flagged: av.SoldOut, gen: av.Gen, allowance: av.Allowance, deduct: av.Deduct}, err
		},
		empty: g.observedEmpty,
	})
}

// stockSource is where an admission reads a SKU's units (Redis's buckets,
// or MySQL's row while Redis is down) and how it records a read of none.
type stockSource struct {
	read  func(ctx context.Context, sku string) (stockRead, error)
	empty func(ctx context.Context, sku string, tok token, gen int64)
	// note ends a sold-out answer read from this source.
	note string
}

// stockRead is one read of a SKU's units.
type stockRead struct {
	units int64
	// flagged: the Redis sold-out flag was set, read in the same round
	// trip as the stock; units were not read.
	flagged bool
	gen     int64
	// allowance is the buyer's per-SKU limit and the units they hold, read
	// in the same round trip (zero: not known, MySQL alone checks).
	allowance inventory.Allowance
	// deduct is when the SKU takes its unit, read in the same round trip
	// (empty: not known, as from MySQL).
	deduct flashsale.Deduct
}

// itemAdmission is the window's answer for one item, with when the SKU
// takes its unit as the read that was admitted found it (empty unless
// admitted from Redis).
type itemAdmission struct {
	res    admission
	deduct flashsale.Deduct
}

// admitFrom reads src for one item and asks window. A read made stale by a
// request finishing meanwhile is repeated a few times; under a flood that
// keeps happening, the answer is BUSY.
func (g *Gate) admitFrom(ctx context.Context, it flashsale.Item, window *inflight, limit int64, src stockSource) (itemAdmission, error) {
	for range 3 {
		seen := window.releases(it.SKU)
		tok := g.cache.token(time.Now())
		r, err := src.read(ctx, it.SKU)
		if flashsale.ErrorCode(err) == flashsale.UnknownSKU {
			g.stats.unknownSKU.Add(1)
			return itemAdmission{}, fmt.Errorf("sku %s: %w", it.SKU, flashsale.Errorf(flashsale.UnknownSKU, "unknown sku"))
		}
		if err != nil {
			return itemAdmission{}, g.unavailable(ctx, err)
		}
		// Before the stock: a buyer at the limit (or asking more than it)
		// cannot be served whatever is left, and must not start a workflow
		// that Reserve would refuse. Reserve's limit_take.lua is the atomic
		// check; this read only answers early.
		if !r.allowance.Allows(it.Quantity) {
			g.stats.limitExceeded.Add(1)
			return itemAdmission{}, fmt.Errorf("sku %s: holds %d, wants %d, limit %d: %w", it.SKU, r.allowance.Held, it.Quantity,
				r.allowance.Limit, flashsale.Errorf(flashsale.LimitExceeded, "per-user limit exceeded"))
		}
		if r.flagged {
			g.soldOutSeen(ctx, it.SKU, tok, r.gen)
			g.stats.soldOutRedis.Add(1)
			return itemAdmission{}, decidedBy(it.SKU, fmt.Errorf("sku %s: %w (redis flag)", it.SKU, flashsale.Errorf(flashsale.SoldOut, "sold out")))
		}
		if r.units == 0 {
			src.empty(ctx, it.SKU, tok, r.gen)
			g.stats.soldOutStock.Add(1)
			return itemAdmission{}, decidedBy(it.SKU, fmt.Errorf("sku %s: %w%s", it.SKU, flashsale.Errorf(flashsale.SoldOut, "sold out"), src.note))
		}
		// Nobody else in flight and too few units is a plain "not enough
		// left", not an empty SKU: no sold-out hint is recorded.
		if res := window.admit(it.SKU, it.Quantity, r.units, limit, seen); res != stale {
			return itemAdmission{res: res, deduct: r.deduct}, nil
		}
	}
	return itemAdmission{res: busy}, nil
}

// overloaded answers BUSY, with this instance's Retry-After, a request
// that found every connection of its Redis pool taken. err, the cause,
// stays wrapped for the logs.
func (g *Gate) overloaded(err error) error {
	busy := g.busy()
	busy.Err = fmt.Errorf("%w: %w", busy.Err, err)
	return busy
}

// busy answers BUSY with this instance's Retry-After.
func (g *Gate) busy() *RetryError {
	g.stats.busy.Add(1)
	after := g.opts.BusyRetryAfter
	if p := g.opts.Placements; p != nil {
		// One Retry-After for every BUSY of this instance, sized to how
		// saturated it is (PlacementLimit.refuse).
		after = max(after, p.RetryAfterBusy())
	}
	return &RetryError{Err: flashsale.Errorf(flashsale.Busy, "busy"), After: after}
}

// unavailable marks err as Redis (or MySQL) not answering, unless the
// request's own context ended (a buyer who hung up is not an outage) or
// this instance's Redis pool was exhausted: more buyers in flight than its
// connections is this instance's overload, answered BUSY like the window's,
// not a reason to degrade a healthy Redis to MySQL.
func (g *Gate) unavailable(ctx context.Context, err error) error {
	if redisguard.IsOverload(err) {
		return g.overloaded(err)
	}
	if ctx.Err() != nil {
		return err
	}
	g.stats.unavailable.Add(1)
	return fmt.Errorf("%w: %w", flashsale.Errorf(flashsale.Unavailable, "edge unavailable"), err)
}

// observedEmpty records that sku was read with zero units at generation gen
// (token tok taken before the read): in this instance's cache, and in the
// Redis flag so other instances stop at their layer 3. Both refuse a stale
// observation, so a unit that came back meanwhile stays visible.
func (g *Gate) observedEmpty(ctx context.Context, sku string, tok token, gen int64) {
	g.soldOutSeen(ctx, sku, tok, gen)
	if _, err := g.stock.MarkSoldOut(ctx, sku, gen); err != nil {
		// Only a hint; the next reader sees the empty buckets itself.
		g.opts.Logger.Warn("set sold-out flag", "sku_id", sku, "error", err)
	}
}
