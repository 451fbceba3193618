package edge

// Admission while Redis is down ("Redis down" in docs/design/edge.md): the
// sold-out cache, a smaller window, and MySQL's available units read once
// per SKU at a time.

import (
	"context"
	"time"

	"github.com/flashsale/flashsale"
)

// admitDegraded admits a request while Redis is down (see "Redis down" in
// the package comment): sold-out cache, degraded window, MySQL's units.
func (g *Gate) admitDegraded(ctx context.Context, items []flashsale.Item) (*Ticket, error) {
	g.stats.degraded.Add(1)
	if err := g.shedLocal(items, g.degraded, g.opts.DegradedMaxInFlight, false); err != nil {
		return nil, err
	}
	t := &Ticket{g: g, window: g.degraded, Degraded: true}
	// The window before the permit, as in admit.
	if err := t.take(ctx, items, g.admitDegradedItem); err != nil {
		return nil, err
	}
	if err := t.hold(); err != nil {
		t.release()
		return nil, err
	}
	g.stats.admitted.Add(1)
	return t, nil
}

// admitDegradedItem is admitItem with MySQL's available units in place of
// Redis's buckets; a SKU read empty is remembered in this instance's cache
// only (there is no Redis flag to set).
func (g *Gate) admitDegradedItem(ctx context.Context, it flashsale.Item) (itemAdmission, error) {
	return g.admitFrom(ctx, it, g.degraded, g.opts.DegradedMaxInFlight, stockSource{
		read: func(ctx context.Context, sku string) (stockRead, error) {
			units, err := g.dbAvailable(ctx, sku)
			return stockRead{units: units}, err
		},
		empty: func(_ context.Context, sku string, tok token, _ int64) { g.cache.set(sku, tok, time.Now()) },
		note:  " (mysql)",
	})
}

// dbReadTimeout bounds the shared MySQL read of the degraded path.
const dbReadTimeout = 2 * time.Second

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
