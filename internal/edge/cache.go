package edge

import (
	"sync"
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
	until    map[string]time.Time
	// lastChange remembers, per SKU, the seq and time of its latest
	// change, for maxObservation.
	lastChange map[string]change
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
	return &soldOutCache{ttl: ttl, until: map[string]time.Time{}, lastChange: map[string]change{}}
}

// soldOut reports whether sku is cached as sold out at now. Read-locked: it
// is on every buy request's path.
func (c *soldOutCache) soldOut(sku string, now time.Time) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	until, ok := c.until[sku]
	return ok && now.Before(until)
}

func (c *soldOutCache) token(now time.Time) token {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return token{seq: c.seq, at: now}
}

// set caches sku as sold out for ttl, unless the observation behind tok is
// stale. Reports whether it did.
func (c *soldOutCache) set(sku string, tok token, now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if now.Sub(tok.at) > maxObservation || tok.seq < c.resetSeq {
		return false
	}
	if ch, ok := c.lastChange[sku]; ok && ch.seq > tok.seq {
		return false
	}
	if _, ok := c.until[sku]; !ok && len(c.until) >= maxCachedSKUs {
		c.pruneLocked(now)
		if len(c.until) >= maxCachedSKUs {
			// Not caching is always safe: the next buyer reads Redis.
			return false
		}
	}
	c.until[sku] = now.Add(c.ttl)
	return true
}

// changed records that sku's stock went up: its entry goes, and
// observations made before now can no longer set one.
func (c *soldOutCache) changed(sku string, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	delete(c.until, sku)
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
}

// prune drops expired entries and changes too old to matter, so neither map
// grows with the number of SKUs ever seen.
func (c *soldOutCache) prune(now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pruneLocked(now)
}

func (c *soldOutCache) pruneLocked(now time.Time) {
	for sku, until := range c.until {
		if !now.Before(until) {
			delete(c.until, sku)
		}
	}
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
	for _, until := range c.until {
		if now.Before(until) {
			n++
		}
	}
	return n
}
