package httpapi

import (
	"context"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/flashsale/flashsale"
)

// snapshots is the cache in front of every public per-SKU read (the live
// sale page's JSON, GET /api/v1/inventory/{sku}): anybody may poll them,
// bots waiting for a sale to start included, so a SKU is read at most once
// per snapshotFor whatever the number of callers. Callers that find the
// snapshot stale together wait for one read (singleflight), and reads
// running at once are bounded across SKUs, so callers of many SKUs cannot
// queue reads on MySQL.
//
// Both maps are capped on insert, and kept apart: an answer for a SKU that
// exists goes to known, an unknown SKU's 404 to unknown. Made-up names
// therefore never take a real SKU's place; once unknown is full of fresh
// entries a made-up name is read each time, which is what it cost before
// the cache (one MySQL primary-key read), within the read bound.
type snapshots[T any] struct {
	read func(ctx context.Context, sku string) (T, error)
	// busy is answered when every read slot stayed taken for
	// snapshotReadTimeout.
	busy     error
	reads    chan struct{} // semaphore of snapshotMaxReads
	group    singleflight.Group
	maxKnown int

	mu      sync.Mutex
	known   map[string]snapshotEntry[T]
	unknown map[string]snapshotEntry[T]
}

type snapshotEntry[T any] struct {
	at  time.Time
	val T
	err error
}

const (
	// snapshotFor: callers within this of the last read share it.
	snapshotFor = time.Second
	// snapshotReadTimeout bounds one read (MySQL and Redis), and the wait
	// for a read slot.
	snapshotReadTimeout = 2 * time.Second
	// snapshotMaxReads bounds reads running at once, per cache.
	snapshotMaxReads = 4
	// snapshotMaxUnknown caps the unknown SKUs whose 404 is kept.
	snapshotMaxUnknown = 64
)

func newSnapshots[T any](maxKnown int, busy error, read func(context.Context, string) (T, error)) *snapshots[T] {
	return &snapshots[T]{
		read: read, busy: busy, maxKnown: maxKnown,
		reads: make(chan struct{}, snapshotMaxReads),
		known: map[string]snapshotEntry[T]{}, unknown: map[string]snapshotEntry[T]{},
	}
}

// get returns sku's snapshot no older than snapshotFor, reading it once
// for all the callers that find it stale together.
func (c *snapshots[T]) get(ctx context.Context, sku string) (T, error) {
	now := time.Now()
	c.mu.Lock()
	e, ok := c.known[sku]
	if !ok {
		e, ok = c.unknown[sku]
	}
	c.mu.Unlock()
	if ok && now.Sub(e.at) < snapshotFor {
		return e.val, e.err
	}
	ch := c.group.DoChan(sku, func() (any, error) {
		select {
		case c.reads <- struct{}{}:
			defer func() { <-c.reads }()
		case <-time.After(snapshotReadTimeout):
			return nil, c.busy
		}
		// Not the caller's context: the read serves every caller waiting
		// on it, so one hanging up must not fail the others.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), snapshotReadTimeout)
		defer cancel()
		val, err := c.read(rctx, sku)
		// Only answers worth sharing are kept: a known SKU, or its
		// absence. A failed read is retried by the next caller.
		switch {
		case err == nil:
			c.store(c.known, c.maxKnown, sku, snapshotEntry[T]{at: time.Now(), val: val})
		case isUnknownSKU(err):
			c.store(c.unknown, snapshotMaxUnknown, sku, snapshotEntry[T]{at: time.Now(), err: err})
		}
		return val, err
	})
	select {
	case res := <-ch:
		if res.Err != nil {
			var zero T
			return zero, res.Err
		}
		return res.Val.(T), nil
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}

// fresh reads sku now, past the cache: for authenticated callers who must
// see a change they just made (operators after a restock).
func (c *snapshots[T]) fresh(ctx context.Context, sku string) (T, error) {
	return c.read(ctx, sku)
}

// store keeps e in m unless m holds limit fresh entries already; stale ones
// make room first.
func (c *snapshots[T]) store(m map[string]snapshotEntry[T], limit int, sku string, e snapshotEntry[T]) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := m[sku]; !ok && len(m) >= limit {
		for k, old := range m {
			if e.at.Sub(old.at) >= snapshotFor {
				delete(m, k)
			}
		}
		if len(m) >= limit {
			return
		}
	}
	m[sku] = e
}

func isUnknownSKU(err error) bool { return flashsale.ErrorCode(err) == flashsale.UnknownSKU }
