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
// The key layout is documented in keys.go, the scripts in the *.lua files.
package inventory

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/flashsale/flashsale"

	"github.com/redis/go-redis/v9"
)

// StockChangedChannel is the Pub/Sub channel bump.lua publishes the SKU id
// on whenever its stock goes up, so API instances can drop an in-process
// sold-out cache at once instead of waiting for it to expire.
const StockChangedChannel = "fs:stock-changed"

// MaxBuckets caps the bucket count. Release and the sold-out path touch every
// bucket of a SKU, so the count bounds their cost.
const MaxBuckets = 1024

var (
	// ErrSoldOut means the buckets together do not hold enough units.
	ErrSoldOut error = &flashsale.Error{Code: flashsale.SoldOut, Message: "sold out"}
	// ErrUnknownSKU means the SKU has no bucket count: it was never preheated.
	ErrUnknownSKU error = &flashsale.Error{Code: flashsale.UnknownSKU, Message: "unknown sku"}
	// ErrReleased means Reserve ran for an order that was already released;
	// taking stock again would resurrect a cancelled order.
	ErrReleased error = &flashsale.Error{Code: flashsale.AlreadyReleased, Message: "reservation already released"}
	// ErrPreheatMismatch means the buckets did not sum to the database's
	// available stock after Preheat wrote them.
	ErrPreheatMismatch error = &flashsale.Error{Code: flashsale.PreheatMismatch, Message: "preheat mismatch: redis buckets do not sum to db available stock"}
	// ErrInvalidArgument marks caller mistakes (empty ids, non-positive
	// quantities, bad bucket counts). Retrying them cannot succeed, so a
	// Temporal activity should treat them as non-retryable.
	ErrInvalidArgument error = &flashsale.Error{Code: flashsale.Invalid, Message: "invalid argument"}
)

func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidArgument, fmt.Sprintf(format, args...))
}

// validateBuckets rejects a bucket count outside 1..MaxBuckets.
func validateBuckets(buckets int) error {
	if buckets < 1 || buckets > MaxBuckets {
		return invalidf("buckets must be in 1..%d, got %d", MaxBuckets, buckets)
	}
	return nil
}

// validateLoad checks what Preheat and Restore load into a SKU's buckets.
func validateLoad(sku string, available int64, buckets int) error {
	if err := validateSKU(sku); err != nil {
		return err
	}
	if available < 0 {
		return invalidf("available must not be negative, got %d", available)
	}
	return validateBuckets(buckets)
}

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
	// late retry would find no marker and take stock a second time.
	DefaultHeldTTL = 24 * time.Hour
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

// Scripts are embedded so the binary and the Lua cannot drift apart, and
// wrapped in redis.Script so calls go out as EVALSHA (the hash, not the
// source, on the wire) with a fallback to EVAL after a NOSCRIPT.
var (
	//go:embed take.lua
	takeSrc string
	//go:embed release.lua
	releaseSrc string
	//go:embed soldout.lua
	soldOutSrc string
	//go:embed bump.lua
	bumpSrc string
	//go:embed restock.lua
	restockSrc string
	//go:embed drift.lua
	driftSrc string

	takeScript    = redis.NewScript(takeSrc)
	releaseScript = redis.NewScript(releaseSrc)
	soldOutScript = redis.NewScript(soldOutSrc)
	bumpScript    = redis.NewScript(bumpSrc)
	restockScript = redis.NewScript(restockSrc)
	driftScript   = redis.NewScript(driftSrc)
)

// Release modes understood by release.lua.
const (
	modeRelease = "r" // Release: the order is cancelled
	modeSoldOut = "s" // Reserve gives back a take it could not complete
)

// parseBuckets turns the stored bucket count into an int. A missing key is
// ErrUnknownSKU; anything outside 1..MaxBuckets means the key was corrupted,
// and probing a nonsense number of buckets would be worse than failing.
func parseBuckets(v any) (int, error) {
	if v == nil {
		return 0, ErrUnknownSKU
	}
	s, ok := v.(string)
	if !ok {
		return 0, fmt.Errorf("bucket count has type %T", v)
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > MaxBuckets {
		return 0, fmt.Errorf("corrupt bucket count %q", s)
	}
	return n, nil
}

// parseInt reads an optional integer value (nil = 0) from an MGET reply.
func parseInt(v any) (int64, error) {
	if v == nil {
		return 0, nil
	}
	s, ok := v.(string)
	if !ok {
		return 0, fmt.Errorf("value has type %T", v)
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("corrupt integer %q", s)
	}
	return n, nil
}

// bucketCount reads N with one GET.
func (s *Store) bucketCount(ctx context.Context, sku string) (int, error) {
	v, err := s.rdb.Get(ctx, bucketsKey(sku)).Result()
	if errors.Is(err, redis.Nil) {
		return 0, ErrUnknownSKU
	}
	if err != nil {
		return 0, err
	}
	return parseBuckets(v)
}

// readBuckets reads buckets 0..n-1 of sku in one pipeline. A missing bucket
// reads as 0; a negative one (tampering) is returned as it is, for the
// caller to count.
func (s *Store) readBuckets(ctx context.Context, sku string, n int) ([]int64, error) {
	pipe := s.rdb.Pipeline()
	cmds := make([]*redis.StringCmd, n)
	for b := range cmds {
		cmds[b] = pipe.Get(ctx, stockKey(sku, b))
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("read buckets: %w", err)
	}
	per := make([]int64, n)
	for b, cmd := range cmds {
		v, err := cmd.Int64()
		if errors.Is(err, redis.Nil) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("bucket %d: %w", b, err)
		}
		per[b] = v
	}
	return per, nil
}

// scriptCall is one invocation of a script inside a pipeline.
type scriptCall struct {
	keys []string
	args []any
}

// evalPipelined runs script once per call in a single pipeline (one round
// trip per node instead of one per bucket). Calls that fail with NOSCRIPT
// (script cache flushed, failover to a node that never saw the script) are
// retried once after loading the script. Only the failed calls are re-run,
// so a call that already ran is never repeated; the scripts used here are
// idempotent anyway.
func (s *Store) evalPipelined(ctx context.Context, script *redis.Script, calls []scriptCall) ([]*redis.Cmd, error) {
	cmds := make([]*redis.Cmd, len(calls))
	pending := make([]int, len(calls))
	for i := range pending {
		pending[i] = i
	}
	for attempt := 0; ; attempt++ {
		pipe := s.rdb.Pipeline()
		for _, i := range pending {
			cmds[i] = script.EvalSha(ctx, pipe, calls[i].keys, calls[i].args...)
		}
		// Exec reports only the first failure; each command is checked below.
		_, _ = pipe.Exec(ctx)

		var missing []int
		for _, i := range pending {
			err := cmds[i].Err()
			switch {
			case err == nil:
			case attempt == 0 && redis.HasErrorPrefix(err, "NOSCRIPT"):
				missing = append(missing, i)
			default:
				return nil, err
			}
		}
		if len(missing) == 0 {
			return cmds, nil
		}
		// On a cluster client SCRIPT LOAD goes to every primary.
		if err := script.Load(ctx, s.rdb).Err(); err != nil {
			return nil, fmt.Errorf("load script after NOSCRIPT: %w", err)
		}
		pending = missing
	}
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
