// Package inventory keeps flash-sale stock in Redis and pre-deducts it before
// an order reaches MySQL.
//
// Each SKU's stock is split into N buckets so that one hot SKU is spread over
// N keys (and, on Redis Cluster, over N slots). Every change to a bucket is a
// Lua script that also writes a per-order marker in the same slot, which makes
// Reserve and Release idempotent: a Temporal activity can be retried any
// number of times and stock moves exactly once. MySQL stays the final guard;
// Redis only keeps the database from being hit by buyers who cannot win.
//
// The bucket layout and how a resize keeps it whole are described in
// docs/design/buckets.md; the layout Reserve needs is in layout.go, the key
// layout in keys.go, the scripts in scripts.go and the *.lua files.
package inventory

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flashsale/flashsale"
)

// StockChangedChannel is the Pub/Sub channel bump.lua publishes the SKU id
// on whenever its stock goes up, so API instances can drop an in-process
// sold-out cache at once instead of waiting for it to expire.
const StockChangedChannel = "fs:stock-changed"

// evenShare is the k-th of n parts of units split as evenly as possible,
// the remainder going to the lowest parts.
func evenShare(units int64, n, k int) int64 {
	share := units / int64(n)
	if int64(k) < units%int64(n) {
		share++
	}
	return share
}

// Default TTLs. Options fields left zero take these.
const (
	// DefaultSoldOutTTL is short: the flag is a hint that saves a probe of
	// every bucket, and a wrong hint (missed bump) must heal by itself.
	DefaultSoldOutTTL = 10 * time.Second
	// DefaultHeldTTL must outlive any retry of the order's workflow, or a
	// late retry would find no marker and take stock a second time, and
	// any order's payment window, or the release at its deadline would
	// find no marker and give nothing back: flashsale.MarkerTTL, the
	// longest window a SKU may have (72 h) plus a day.
	DefaultHeldTTL = flashsale.MarkerTTL
	// DefaultZeroTTL is shorter: a "nothing taken" marker only has to make
	// retries during the order's reserve step replay the same answer, and
	// sold-out buyers create one per bucket.
	DefaultZeroTTL = 15 * time.Minute
)

// Options tune the TTLs. Zero values take the defaults above.
type Options struct {
	// SoldOutTTL is how long the sold-out flag lives.
	SoldOutTTL time.Duration
	// HeldTTL is how long markers of taken (and later released) units, the
	// Release tombstones and the restock markers live.
	HeldTTL time.Duration
	// ZeroTTL is how long a "probed, nothing here" marker lives.
	ZeroTTL time.Duration
}

// Store reserves and releases bucketed stock. It is safe for concurrent use.
type Store struct {
	rdb redis.UniversalClient

	soldOutMs, heldMs, zeroMs int64

	// layouts caches each SKU's layout for Reserve (layoutcache.go).
	layouts layoutCache

	// beforeVerify, if set, runs between Preheat's writes and its read-back,
	// so tests can prove the verification is able to fail.
	beforeVerify func(sku string)
}

// New returns a Store on rdb. rdb may be a single node, a failover client or
// a cluster client: every script touches keys of one slot only.
func New(rdb redis.UniversalClient, opts Options) *Store {
	return &Store{
		rdb:       rdb,
		soldOutMs: millis(opts.SoldOutTTL, DefaultSoldOutTTL),
		heldMs:    millis(opts.HeldTTL, DefaultHeldTTL),
		zeroMs:    millis(opts.ZeroTTL, DefaultZeroTTL),
	}
}

// millis converts a TTL to the milliseconds the scripts pass to SET PX; a
// sub-millisecond TTL is rounded up because PX 0 is an error.
func millis(d, def time.Duration) int64 {
	if d <= 0 {
		d = def
	}
	return max(int64((d+time.Millisecond-1)/time.Millisecond), 1)
}

// bump runs bump.lua: gen+1, sold-out flag cleared, change published.
func (s *Store) bump(ctx context.Context, sku string) error {
	_, err := s.bumpCount(ctx, sku)
	return err
}

// bumpCount is bump that also returns the bucket count read in the same
// step (0 when the SKU has none).
func (s *Store) bumpCount(ctx context.Context, sku string) (int, error) {
	res, err := bumpScript.Run(ctx, s.rdb, []string{genKey(sku), soldOutKey(sku), bucketsKey(sku)},
		sku, StockChangedChannel).Int64Slice()
	if err != nil {
		return 0, err
	}
	if len(res) != 2 {
		return 0, fmt.Errorf("bump: unexpected reply %v", res)
	}
	return int(res[1]), nil
}

// Ping checks that Redis answers: Unavailable when it does not.
func (s *Store) Ping(ctx context.Context) (err error) {
	defer codeOutage(&err)
	return s.rdb.Ping(ctx).Err()
}
