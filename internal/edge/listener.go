package edge

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flashsale/flashsale/internal/inventory"
)

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
