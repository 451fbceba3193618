package inventory

// The per-process cache of SKU layouts, so a reservation is one script call
// in the common case instead of an MGET of the layout before it.
//
// A cached layout is never trusted on its own: every take.lua call made
// under it carries its epoch, and take.lua refuses (-4, nothing read or
// written) unless the bucket's stamp equals it. Whoever changes a layout
// (Resize, Preheat, Restore) first raises the stamp of every bucket an old
// or new layout can lead a buyer to (stamp.lua, never lowering it), and
// only then moves the epoch together with the count and history (one
// script or MSET in the SKU slot). So a stamp equal to the cached epoch
// means no change of the layout has begun to take effect at the moment of
// the take: the take is exactly as safe as one made right after an MGET
// of the layout (safer: that MGET may be a whole round trip old). A
// refusal drops the entry, and Reserve reads the layout and starts over,
// the way a retry of the order would (markers replay, a retry after a
// resize walks its first attempt's buckets).
//
// What the stamps do not guard, a short TTL bounds: whether the SKU has a
// per-buyer limit (read with the layout, so a buyer of a SKU without one
// pays no limit_take.lua call; a SetLimit without a new Preheat is seen
// within layoutCacheTTL, and until then Redis counts leniently, MySQL
// stays the final guard), and layouts kept after keys were lost without a
// new layout being loaded.

import (
	"context"
	"strconv"
	"sync"
	"time"
)

// layoutCacheTTL is how long a cached layout is used before it is read
// again: one MGET per SKU per second per process, next to nothing. A
// variable so tests can keep entries long enough to prove the stamps,
// not the TTL, refuse a stale one.
var layoutCacheTTL = time.Second

// layoutCacheMax bounds the cache; past it, it starts over empty.
const layoutCacheMax = 4096

// cachedLayout is what Reserve needs to know about a SKU before its first
// take, as read by one MGET at read.
type cachedLayout struct {
	lay      layout
	hasLimit bool // a per-buyer limit key exists (limit.go)
	read     time.Time
}

// layoutCache maps sku -> *cachedLayout. Entries are never changed in
// place, so readers need no lock.
type layoutCache struct {
	m sync.Map
	n sync.Mutex // guards size
	// size counts stored entries (approximately: a replaced entry counts
	// again), to bound the map.
	size int
}

// get returns sku's layout if cached within layoutCacheTTL.
func (c *layoutCache) get(sku string) (*cachedLayout, bool) {
	v, ok := c.m.Load(sku)
	if !ok {
		return nil, false
	}
	e := v.(*cachedLayout)
	if time.Since(e.read) > layoutCacheTTL {
		return nil, false
	}
	return e, true
}

// put caches e for sku.
func (c *layoutCache) put(sku string, e *cachedLayout) {
	c.n.Lock()
	c.size++
	if c.size > layoutCacheMax {
		c.m.Clear()
		c.size = 1
	}
	c.n.Unlock()
	c.m.Store(sku, e)
}

// forget drops sku's entry (a take refused it, or this process changed
// the layout or the limit itself).
func (c *layoutCache) forget(sku string) { c.m.Delete(sku) }

// readLayout reads what Reserve needs with one MGET (count, history,
// epoch, whether a limit exists; all in the SKU slot) and caches it.
func (s *Store) readLayout(ctx context.Context, sku string) (*cachedLayout, error) {
	vals, err := s.rdb.MGet(ctx, bucketsKey(sku), layoutsKey(sku), epochKey(sku), limitKey(sku)).Result()
	if err != nil {
		return nil, err
	}
	lay, err := parseLayout(vals[0], vals[1], vals[2])
	if err != nil {
		return nil, err
	}
	e := &cachedLayout{lay: lay, hasLimit: vals[3] != nil, read: time.Now()}
	s.layouts.put(sku, e)
	return e, nil
}

// epochArg is take.lua's ARGV[4]: the epoch to check a cached layout
// against, or "" when the layout was read by this call (no check).
func epochArg(lay layout, cached bool) string {
	if !cached {
		return ""
	}
	return strconv.FormatInt(lay.epoch, 10)
}
