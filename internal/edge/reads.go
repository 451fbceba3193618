package edge

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"

	"github.com/flashsale/flashsale"
)

// ScopeOrders counts a buyer's reads and cancels of orders (see
// RateLimitAt). Apart from buys: polling an order must not cost the buyer
// their next buy, nor a buy their next look.
const ScopeOrders = "orders"

// DefaultOrderRate is order reads and cancels per second per buyer,
// across instances: a page polling its order once a second, with room for
// a few clicks.
const DefaultOrderRate = 10

// RateLimitAt is RateLimit at its own rate: perSecond requests of scope
// per userID, shared by every instance through Redis.
func (g *Gate) RateLimitAt(ctx context.Context, scope, userID string, perSecond int) error {
	res, err := g.limiter.Allow(ctx, rateKey(scope, userID), redis_rate.PerSecond(perSecond))
	if err != nil {
		return g.unavailable(ctx, fmt.Errorf("rate limit %s: %w", scope, err))
	}
	if res.Allowed == 0 {
		// Not counted among the gate's rate-limited buys: its counters
		// describe the sale's shedding, and a poller is not a buyer shed.
		return &RetryError{Err: flashsale.Errorf(flashsale.RateLimited, "rate limited"), After: res.RetryAfter}
	}
	return nil
}

// PlacedBy is the buyer an order id was admitted for, from its placed
// marker; "" when there is none (never admitted here, or older than
// Options.PlacedTTL). A reader learns from it who owns an order with no
// MySQL row yet (still reserving) or ever (rejected), without asking
// Temporal.
func (g *Gate) PlacedBy(ctx context.Context, orderID string) (string, error) {
	owner, err := g.rdb.Get(ctx, placedKey(orderID)).Result()
	switch {
	case errors.Is(err, redis.Nil):
		return "", nil
	case err != nil:
		return "", g.unavailable(ctx, fmt.Errorf("read placed marker of order %s: %w", orderID, err))
	}
	return owner, nil
}
