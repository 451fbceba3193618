package edge

import (
	"sync"
	"sync/atomic"
	"time"
)

// maxObservation bounds how old a sold-out observation may be when it is
// cached, and so how long stock changes must be remembered to refuse stale
// ones. Observations take a few Redis round trips, far below this.
const maxObservation = 5 * time.Second

// maxCachedSKUs caps each of the cache's maps on insert. Only SKUs read
// from Redis or MySQL, or named by a stock change, get in, but the maps
// must not depend on prune running (Run) to stay small.
const maxCachedSKUs = 4096

// soldOutCache is the in-process sold-out layer: SKU -> until when this
// instance answers SOLD_OUT without asking anyone.
//
// The danger is a stale entry: an instance reads "0 units", a release puts a
// unit back and its Pub/Sub message drops the (not yet written) entry, then
// the instance writes the entry and hides the unit for a whole TTL. So, like
// soldout.lua with Redis's gen, every observation carries a token taken
// before its read, and set refuses it if the SKU changed since the token.
type soldOutCache struct {
	ttl time.Duration

	mu sync.RWMutex
	// seq counts the changes heard; a token is the seq at its time.
	seq uint64
	// resetSeq is the seq of the last reset: tokens from before it are
	// refused for every SKU, because changes may have been missed.
	resetSeq uint64
	until    map[string]entry
	// live is len(until), read without the lock (AnySoldOut).
	live atomic.Int64
	// placed holds, per SKU, the ids of the orders placed for it, read
	// from Redis once the SKU was seen sold out at a generation (the quick
	// answer's snapshot). Dropped with any change of the SKU.
	placed map[string]*placedSnapshot
	// lastChange remembers, per SKU, the seq and time of its latest
	// change, for maxObservation.
	lastChange map[string]change
}

// entry is a SKU cached as sold out: until when, and the Redis generation
// it was seen empty at (-1: not read from Redis).
type entry struct {
	until time.Time
	gen   int64
}

// placedSnapshot is the set of order ids placed for a SKU (Redis's
// fs:{sku:<sku>}:placed), read after the SKU was seen sold out at gen.
type placedSnapshot struct {
	gen int64
	ids map[string]struct{}
}

type change struct {
	seq uint64
	at  time.Time
}

// token marks the moment before an observation.
type token struct {
	seq uint64
	at  time.Time
}

func newSoldOutCache(ttl time.Duration) *soldOutCache {
	return &soldOutCache{ttl: ttl, until: map[string]entry{}, placed: map[string]*placedSnapshot{}, lastChange: map[string]change{}}
}

// soldOut reports whether sku is cached as sold out at now. Read-locked: it
// is on every buy request's path.
func (c *soldOutCache) soldOut(sku string, now time.Time) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	e, ok := c.until[sku]
	return ok && now.Before(e.until)
}

// quick is soldOut with the SKU's snapshot of placed ids, when one was
// read at the generation the SKU was seen sold out at (nil otherwise).
func (c *soldOutCache) quick(sku string, now time.Time) (bool, *placedSnapshot) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	e, ok := c.until[sku]
	if !ok || !now.Before(e.until) {
		return false, nil
	}
	if p := c.placed[sku]; p != nil && e.gen >= 0 && p.gen == e.gen {
		return true, p
	}
	return true, nil
}

// hasPlaced reports whether sku's snapshot was read at generation gen.
func (c *soldOutCache) hasPlaced(sku string, gen int64) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	p := c.placed[sku]
	return p != nil && p.gen == gen
}

// setPlaced keeps ids as sku's snapshot for generation gen, unless the
// read behind tok is stale (as set). Reports whether it did.
func (c *soldOutCache) setPlaced(sku string, tok token, gen int64, ids map[string]struct{}, now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.freshLocked(sku, tok, now) {
		return false
	}
	if _, ok := c.placed[sku]; !ok && len(c.placed) >= maxCachedSKUs {
		c.pruneLocked(now)
		if len(c.placed) >= maxCachedSKUs {
			return false
		}
	}
	c.placed[sku] = &placedSnapshot{gen: gen, ids: ids}
	return true
}

// freshLocked reports whether an observation of sku behind tok may still
// be recorded: no change of the SKU, and no reset, since it began.
func (c *soldOutCache) freshLocked(sku string, tok token, now time.Time) bool {
	if now.Sub(tok.at) > maxObservation || tok.seq < c.resetSeq {
		return false
	}
	ch, ok := c.lastChange[sku]
	return !ok || ch.seq <= tok.seq
}

func (c *soldOutCache) token(now time.Time) token {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return token{seq: c.seq, at: now}
}

// set caches sku as sold out for ttl, unless the observation behind tok is
// stale. Reports whether it did.
func (c *soldOutCache) set(sku string, tok token, now time.Time) bool {
	return c.setAt(sku, tok, -1, now)
}

// setAt is set for an observation of Redis at generation gen.
func (c *soldOutCache) setAt(sku string, tok token, gen int64, now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.freshLocked(sku, tok, now) {
		return false
	}
	if _, ok := c.until[sku]; !ok && len(c.until) >= maxCachedSKUs {
		c.pruneLocked(now)
		if len(c.until) >= maxCachedSKUs {
			// Not caching is always safe: the next buyer reads Redis.
			return false
		}
	}
	c.until[sku] = entry{until: now.Add(c.ttl), gen: gen}
	c.live.Store(int64(len(c.until)))
	return true
}

// changed records that sku's stock went up: its entry goes, and
// observations made before now can no longer set one.
func (c *soldOutCache) changed(sku string, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	delete(c.until, sku)
	delete(c.placed, sku)
	c.live.Store(int64(len(c.until)))
	if _, ok := c.lastChange[sku]; !ok && len(c.lastChange) >= maxCachedSKUs {
		c.pruneLocked(now)
		if len(c.lastChange) >= maxCachedSKUs {
			// Too many recent changes to remember each: refuse every
			// observation in progress instead, as a reset does.
			c.resetSeq = c.seq
			clear(c.lastChange)
			return
		}
	}
	c.lastChange[sku] = change{seq: c.seq, at: now}
}

// reset forgets every entry and refuses every observation in progress.
func (c *soldOutCache) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	c.resetSeq = c.seq
	clear(c.until)
	clear(c.placed)
	c.live.Store(0)
}

// prune drops expired entries and changes too old to matter, so neither map
// grows with the number of SKUs ever seen.
func (c *soldOutCache) prune(now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pruneLocked(now)
}

func (c *soldOutCache) pruneLocked(now time.Time) {
	for sku, e := range c.until {
		if !now.Before(e.until) {
			delete(c.until, sku)
		}
	}
	// A snapshot lives while its SKU is cached as sold out.
	for sku := range c.placed {
		if _, ok := c.until[sku]; !ok {
			delete(c.placed, sku)
		}
	}
	c.live.Store(int64(len(c.until)))
	for sku, ch := range c.lastChange {
		if now.Sub(ch.at) > maxObservation {
			delete(c.lastChange, sku)
		}
	}
}

// size counts live entries, for Stats.
func (c *soldOutCache) size(now time.Time) int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	n := 0
	for _, e := range c.until {
		if now.Before(e.until) {
			n++
		}
	}
	return n
}
