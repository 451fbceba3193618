package edge

import (
	"sync"
	"time"
)

// maxObservation bounds how old a sold-out observation may be when it is
// cached, and so how long stock changes must be remembered to refuse stale
// ones. Observations take a few Redis round trips, far below this.
const maxObservation = 5 * time.Second

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
	c.until[sku] = now.Add(c.ttl)
	return true
}

// changed records that sku's stock went up: its entry goes, and
// observations made before now can no longer set one.
func (c *soldOutCache) changed(sku string, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	c.lastChange[sku] = change{seq: c.seq, at: now}
	delete(c.until, sku)
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

// inflight counts, per SKU, the units of admitted requests whose placement
// has not answered yet. Entries are deleted at zero, so unknown or idle SKUs
// cost nothing.
type inflight struct {
	mu    sync.Mutex
	units map[string]int64
	sum   int64
	// released counts give-backs per SKU (one entry per SKU ever sold here,
	// so it stays small).
	released map[string]uint64
}

func newInflight() *inflight {
	return &inflight{units: map[string]int64{}, released: map[string]uint64{}}
}

// admission is the window's decision for one request.
type admission int

const (
	admitted admission = iota
	busy               // units remain, but the admitted ones in flight may take them
	tooFew             // nothing in flight and still not enough units
	stale              // an admitted request finished since the read: read again
)

// releases returns how many times admitted units of sku have been given
// back. admit compares it with the value taken before the Redis read.
func (f *inflight) releases(sku string) uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.released[sku]
}

// admit takes qty units of the window for sku if the units already admitted
// plus qty fit into both units (what Redis held when read) and limit. A
// request alone may exceed limit: an order larger than the window must
// still be servable.
//
// seen is releases(sku) taken before units was read. If an admitted request
// finished in between, its unit may have left Redis after the read while it
// no longer counts in flight, so the read is stale and must not admit.
func (f *inflight) admit(sku string, qty, units, limit int64, seen uint64) admission {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.released[sku] != seen {
		return stale
	}
	cur := f.units[sku]
	switch {
	case cur == 0 && qty > units:
		return tooFew
	case cur+qty > units, cur > 0 && cur+qty > limit:
		return busy
	}
	f.units[sku] = cur + qty
	f.sum += qty
	return admitted
}

// full reports whether the window is at its limit; it reserves nothing.
func (f *inflight) full(sku string, qty, limit int64) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	cur := f.units[sku]
	return cur > 0 && cur+qty > limit
}

func (f *inflight) release(sku string, qty int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.released[sku]++
	cur := f.units[sku] - qty
	if cur <= 0 {
		delete(f.units, sku)
	} else {
		f.units[sku] = cur
	}
	f.sum -= qty
}

func (f *inflight) total() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.sum
}
