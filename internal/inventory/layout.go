package inventory

// The bucket layout every per-order call depends on: how many buckets a SKU
// has now, every count it had before (after a resize), where an order starts
// and which buckets it walks. Why the layout is safe to change mid-sale is in
// docs/design/buckets.md; the change itself is resize.go and move.go.

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/flashsale/flashsale"

	"github.com/redis/go-redis/v9"
)

// startBucket spreads orders over the buckets. It depends only on the order
// id, so every retry of an order walks the buckets in the same order and
// meets its own markers.
func startBucket(orderID string, n int) int {
	return int(crc32.ChecksumIEEE([]byte(orderID)) % uint32(n))
}

// layout is what a per-order call needs to know about a SKU's buckets.
type layout struct {
	n     int   // current count: buyers take from 0..n-1
	probe int   // buckets a marker may live in: max(n, every earlier count)
	past  []int // every count from the layouts list (empty: never resized)
	epoch int64 // the layout epoch read with them (0: never stamped)
}

// parseLayout reads the bucket count, layouts list and layout epoch from
// an MGET reply.
func parseLayout(count, layouts, epoch any) (layout, error) {
	n, err := parseBuckets(count)
	if err != nil {
		return layout{}, err
	}
	e, err := parseInt(epoch)
	if err != nil {
		return layout{}, fmt.Errorf("layout epoch: %w", err)
	}
	lay := layout{n: n, probe: n, epoch: e}
	if layouts == nil {
		return lay, nil
	}
	s, ok := layouts.(string)
	if !ok {
		return layout{}, fmt.Errorf("layouts has type %T", layouts)
	}
	for f := range strings.SplitSeq(s, ",") {
		m, err := strconv.Atoi(f)
		if err != nil || m < 1 || m > flashsale.MaxBuckets {
			return layout{}, fmt.Errorf("corrupt layouts %q", s)
		}
		lay.past = append(lay.past, m)
		lay.probe = max(lay.probe, m)
	}
	return lay, nil
}

// layout reads the count, layouts list and epoch with one MGET.
func (s *Store) layout(ctx context.Context, sku string) (layout, error) {
	vals, err := s.rdb.MGet(ctx, bucketsKey(sku), layoutsKey(sku), epochKey(sku)).Result()
	if err != nil {
		return layout{}, err
	}
	return parseLayout(vals[0], vals[1], vals[2])
}

// nextEpoch is the epoch a layout change moves cur to. It is at least the
// clock in milliseconds, so a SKU whose keys were deleted and loaded again
// does not start over at an epoch some process still caches from before.
func nextEpoch(cur int64) int64 {
	return max(cur+1, time.Now().UnixMilli())
}

// stampBuckets raises the layout stamp of buckets 0..n-1 to epoch (one
// pipeline of stamp.lua). It must return before the epoch itself moves:
// from then on a take under any older cached layout is refused in every
// bucket such a layout can lead to (layoutcache.go).
func (s *Store) stampBuckets(ctx context.Context, sku string, n int, epoch int64) error {
	calls := make([]scriptCall, n)
	for b := range calls {
		calls[b] = scriptCall{keys: []string{stampKey(sku, b)}, args: []any{epoch}}
	}
	cmds, err := s.evalPipelined(ctx, stampScript, calls)
	if err != nil {
		return fmt.Errorf("stamp layout epoch: %w", err)
	}
	for b, cmd := range cmds {
		if err := cmd.Err(); err != nil {
			return fmt.Errorf("stamp layout epoch in bucket %d: %w", b, err)
		}
	}
	return nil
}

// walkOf is the probe order of an order under count m, followed by the
// buckets m..n-1 when the SKU has grown since.
func walkOf(orderID string, m, n int) []int {
	start := startBucket(orderID, m)
	walk := make([]int, 0, max(m, n))
	for k := range m {
		walk = append(walk, (start+k)%m)
	}
	for b := m; b < n; b++ {
		walk = append(walk, b)
	}
	return walk
}

// walkFor picks the walk of Reserve. A first attempt walks the current
// count. A retry (some start bucket, under the current or an earlier count,
// holds this order's marker) must meet every marker its earlier attempts
// left before it takes anything new, or it would take again what they
// hold: the markers found anywhere in the probe range come first, then the
// rest of the walk of the count whose start bucket is marked.
//
// The marked start bucket alone does not say which walk an attempt made:
// counts 4 and 16 share the start bucket of an order whose crc32 is 3 mod
// 16, but the walk under 4 goes on to bucket 0 and the walk under 16 to
// bucket 4. A walk interrupted by a resize (a crash, or take.lua refusing
// a cached layout part-way) left markers along the old one; replaying only
// the new one took the units again (TestResizeUnderLoad found it).
func (s *Store) walkFor(ctx context.Context, sku, orderID string, lay layout) ([]int, error) {
	m, marked, err := s.markedCount(ctx, sku, orderID, lay, orderKey)
	if err != nil {
		return nil, fmt.Errorf("find the layout of an earlier attempt: %w", err)
	}
	walk := walkOf(orderID, m, lay.n)
	if !marked {
		return walk, nil
	}
	held, err := s.markedBuckets(ctx, sku, orderID, lay.probe)
	if err != nil {
		return nil, fmt.Errorf("find the buckets of an earlier attempt: %w", err)
	}
	return markedFirst(walk, held), nil
}

// markedFirst reorders walk so the buckets in held come first (in walk
// order, then any held bucket the walk does not reach), the rest after.
func markedFirst(walk []int, held map[int]bool) []int {
	out := make([]int, 0, len(walk)+len(held))
	inWalk := make(map[int]bool, len(walk))
	for _, b := range walk {
		inWalk[b] = true
		if held[b] {
			out = append(out, b)
		}
	}
	for b := range slices.Sorted(maps.Keys(held)) {
		if !inWalk[b] {
			out = append(out, b)
		}
	}
	for _, b := range walk {
		if !held[b] {
			out = append(out, b)
		}
	}
	return out
}

// markedBuckets is the set of buckets 0..probe-1 that hold a marker of
// orderID (one pipeline of EXISTS; only a retry after a resize pays it).
func (s *Store) markedBuckets(ctx context.Context, sku, orderID string, probe int) (map[int]bool, error) {
	pipe := s.rdb.Pipeline()
	cmds := make([]*redis.IntCmd, probe)
	for b := range cmds {
		cmds[b] = pipe.Exists(ctx, orderKey(sku, b, orderID))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, err
	}
	held := map[int]bool{}
	for b, cmd := range cmds {
		if cmd.Val() == 1 {
			held[b] = true
		}
	}
	return held, nil
}

// markedCount is the count, current or earlier, under which an earlier
// attempt of id left its marker in its start bucket crc32(id)%M (marked),
// or the current count when none did. The candidates are checked in one
// pipeline; a SKU never resized has one candidate and costs no read.
func (s *Store) markedCount(ctx context.Context, sku, id string, lay layout, marker func(sku string, bucket int, id string) string) (m int, marked bool, _ error) {
	if len(lay.past) == 0 {
		return lay.n, false, nil
	}
	counts := append([]int{lay.n}, lay.past...)
	pipe := s.rdb.Pipeline()
	cmds := make([]*redis.IntCmd, len(counts))
	for i, m := range counts {
		cmds[i] = pipe.Exists(ctx, marker(sku, startBucket(id, m), id))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return 0, false, err
	}
	for i, m := range counts {
		if cmds[i].Val() == 1 {
			return m, true, nil
		}
	}
	return lay.n, false, nil
}

// parseBuckets turns the stored bucket count into an int. A missing key is
// an UnknownSKU error; anything outside 1..flashsale.MaxBuckets means the
// key was corrupted, and probing a nonsense number of buckets would be
// worse than failing.
func parseBuckets(v any) (int, error) {
	if v == nil {
		return 0, flashsale.Errorf(flashsale.UnknownSKU, "unknown sku")
	}
	s, ok := v.(string)
	if !ok {
		return 0, fmt.Errorf("bucket count has type %T", v)
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > flashsale.MaxBuckets {
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
		return 0, flashsale.Errorf(flashsale.UnknownSKU, "unknown sku")
	}
	if err != nil {
		return 0, err
	}
	return parseBuckets(v)
}
