package inventory

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// This file holds what reconciliation and the invariant checker need from
// Redis: a snapshot of a SKU's buckets with the counters that tell whether
// it was taken while stock moved, the units each order still holds, and the
// three writes a reconciler may make (restore lost buckets, claim an
// observation, correct the buckets by a relative amount). None of them ever
// SETs a bucket to a total computed from an earlier read: buyers keep
// taking while they run.

// Marks are the SKU-level counters that move when stock is put back or a
// reconciler acts: read before and after a longer read, unchanged marks
// prove no release, restock, preheat, restore or correction happened in
// between. Takes do not move them (they would make every mark stale during
// a sale); see activities.Reconciler for why takes need no mark.
type Marks struct {
	// Missing is true when the bucket count is gone: the SKU was never
	// preheated, or Redis lost it (restart, failover, flush).
	Missing bool  `json:"missing"`
	Buckets int   `json:"buckets"`
	Gen     int64 `json:"gen"`
	Fence   int64 `json:"fence"`
}

// Marks reads the bucket count, gen and reconcile fence with one MGET.
func (s *Store) Marks(ctx context.Context, sku string) (_ Marks, err error) {
	defer codeOutage(&err)
	if err := validateSKU(sku); err != nil {
		return Marks{}, fmt.Errorf("marks %s: %w", sku, err)
	}
	vals, err := s.rdb.MGet(ctx, bucketsKey(sku), genKey(sku), reconcileFenceKey(sku)).Result()
	if err != nil {
		return Marks{}, fmt.Errorf("marks %s: %w", sku, err)
	}
	var m Marks
	if vals[0] == nil {
		m.Missing = true
	} else if m.Buckets, err = parseBuckets(vals[0]); err != nil {
		return Marks{}, fmt.Errorf("marks %s: %w", sku, err)
	}
	if m.Gen, err = parseInt(vals[1]); err != nil {
		return Marks{}, fmt.Errorf("marks %s: gen: %w", sku, err)
	}
	if m.Fence, err = parseInt(vals[2]); err != nil {
		return Marks{}, fmt.Errorf("marks %s: fence: %w", sku, err)
	}
	return m, nil
}

// Snapshot is a SKU's buckets with the marks read just before them.
type Snapshot struct {
	Marks
	// Units is the sum of the buckets as take.lua sees them: a negative
	// bucket (tampering) counts as empty.
	Units int64 `json:"units"`
	// NegativeBuckets lists buckets holding a negative count.
	NegativeBuckets []int `json:"negative_buckets,omitempty"`
	// InTransit is the part of Units that a bucket resize (move.go) has
	// taken out of one bucket and not yet put into another.
	InTransit int64 `json:"in_transit,omitempty"`
}

// Snapshot reads the marks, then every bucket in one pipeline, then the
// units a resize has in transit between buckets. A missing SKU is not an
// error: Missing is set and there are no buckets to read.
func (s *Store) Snapshot(ctx context.Context, sku string) (_ Snapshot, err error) {
	defer codeOutage(&err)
	m, err := s.Marks(ctx, sku)
	if err != nil {
		return Snapshot{}, err
	}
	snap := Snapshot{Marks: m}
	if m.Missing {
		return snap, nil
	}
	// A lost bucket reads as 0; the drift shows it.
	per, err := s.readBuckets(ctx, sku, m.Buckets)
	if err != nil {
		return Snapshot{}, fmt.Errorf("snapshot %s: %w", sku, err)
	}
	for b, v := range per {
		if v < 0 {
			snap.NegativeBuckets = append(snap.NegativeBuckets, b)
			continue
		}
		snap.Units += v
	}
	if snap.InTransit, err = s.inTransit(ctx, sku); err != nil {
		return Snapshot{}, fmt.Errorf("snapshot %s: %w", sku, err)
	}
	snap.Units += snap.InTransit
	return snap, nil
}

// HeldByOrder returns, per order id, the units the order's markers say it
// took from sku's buckets and still holds (markers "<k>" with k > 0).
// Released ("r"), given-back ("s") and empty-probe ("0") markers hold
// nothing. It SCANs the keyspace (every primary on a cluster), because
// markers are only findable by pattern; that costs one pass over the keys
// per call, which suits a periodic job and not the buying path.
func (s *Store) HeldByOrder(ctx context.Context, sku string) (_ map[string]int64, err error) {
	defer codeOutage(&err)
	if err := validateSKU(sku); err != nil {
		return nil, fmt.Errorf("held by order %s: %w", sku, err)
	}
	prefix := orderKeyPrefix(sku)
	pattern := globEscape(prefix) + "*}:order:*"

	keys, err := s.scanKeys(ctx, pattern)
	if err != nil {
		return nil, fmt.Errorf("held by order %s: %w", sku, err)
	}

	type marker struct {
		order string
		cmd   *redis.StringCmd
	}
	var markers []marker
	pipe := s.rdb.Pipeline()
	for _, k := range keys {
		order, ok := parseOrderKey(k, prefix)
		if !ok {
			continue // another SKU whose id starts like this one's
		}
		markers = append(markers, marker{order: order, cmd: pipe.Get(ctx, k)})
	}
	held := make(map[string]int64)
	if len(markers) == 0 {
		return held, nil
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("held by order %s: read markers: %w", sku, err)
	}
	for _, m := range markers {
		v, err := m.cmd.Result()
		if errors.Is(err, redis.Nil) {
			continue // expired since the scan
		}
		if err != nil {
			return nil, fmt.Errorf("held by order %s: marker of %s: %w", sku, m.order, err)
		}
		k, err := strconv.ParseInt(v, 10, 64)
		if err != nil || k <= 0 {
			continue // "r<k>", "s<k>" or "0": nothing held
		}
		held[m.order] += k
	}
	return held, nil
}

// parseOrderKey extracts the order id from prefix + "<digits>}:order:<id>",
// rejecting keys of a different SKU that the glob also matched (a SKU named
// "x:b1" has keys that start like SKU "x"'s).
func parseOrderKey(key, prefix string) (string, bool) {
	rest, ok := strings.CutPrefix(key, prefix)
	if !ok {
		return "", false
	}
	digits, rest, ok := strings.Cut(rest, "}")
	if !ok || digits == "" || strings.Trim(digits, "0123456789") != "" {
		return "", false
	}
	order, ok := strings.CutPrefix(rest, ":order:")
	if !ok || order == "" {
		return "", false
	}
	return order, true
}

// globEscape quotes the characters SCAN MATCH treats as special, so a SKU
// id is matched literally.
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// RestoreResult says what Restore found and did.
type RestoreResult struct {
	// Restored is true when the bucket count was missing and this call
	// wrote it; false when the SKU was on sale already.
	Restored bool  `json:"restored"`
	Buckets  int   `json:"buckets"`
	Units    int64 `json:"units"` // in the buckets after the call, read back
}

// Restore re-preheats a SKU whose bucket count is gone (Redis restarted
// empty, a failover lost it, someone deleted the keys) from the database's
// available units. While the count is missing, Reserve, Release and Restock
// all fail with UnknownSKU, so no buyer is admitted and no bucket moves;
// that is what makes it safe to write the buckets then.
//
// Unlike Preheat it never overwrites: bucket stock and then the count are
// written with SET NX. A second restorer racing this one (an activity retry
// whose first attempt is still running, two reconcile runs), or one that
// comes after buyers were admitted again, therefore cannot clobber live
// stock. Buckets that survived a partial loss keep their value; the
// reconciler's drift correction evens them out later.
//
// The reconcile fence is moved past any earlier value first, so an
// observation taken before the loss never matches one taken after it.
func (s *Store) Restore(ctx context.Context, sku string, available int64, buckets int) (_ RestoreResult, err error) {
	defer codeOutage(&err)
	if err := validateLoad(sku, available, buckets); err != nil {
		return RestoreResult{}, fmt.Errorf("restore %s: %w", sku, err)
	}
	m, err := s.Marks(ctx, sku)
	if err != nil {
		return RestoreResult{}, fmt.Errorf("restore %s: %w", sku, err)
	}
	if !m.Missing {
		// On sale: a restore now would double what buyers can take.
		var res RestoreResult
		err := s.fillUnits(ctx, sku, &res)
		return res, err
	}

	if err := fenceScript.Run(ctx, s.rdb, []string{reconcileFenceKey(sku)}, time.Now().UnixMicro()).Err(); err != nil {
		return RestoreResult{}, fmt.Errorf("restore %s: move fence: %w", sku, err)
	}
	pipe := s.rdb.Pipeline()
	for b := range buckets {
		pipe.SetNX(ctx, stockKey(sku, b), evenShare(available, buckets, b), 0)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return RestoreResult{}, fmt.Errorf("restore %s: write buckets: %w", sku, err)
	}
	// A layout loaded again is a new layout: buckets that survived the
	// loss may still carry the stamp some process caches its old layout
	// under, so they are stamped with a new epoch, and the epoch written,
	// before the count admits buyers (layoutcache.go). Two restorers racing
	// may leave the epoch below the highest stamp: cached takes are then
	// refused and every Reserve reads the layout, until the next Preheat or
	// Resize; never a take under a stale layout.
	epoch := nextEpoch(0)
	if err := s.stampBuckets(ctx, sku, buckets, epoch); err != nil {
		return RestoreResult{}, fmt.Errorf("restore %s: %w", sku, err)
	}
	if err := s.rdb.Set(ctx, epochKey(sku), epoch, 0).Err(); err != nil {
		return RestoreResult{}, fmt.Errorf("restore %s: write layout epoch: %w", sku, err)
	}
	// The count goes last: the moment it exists buyers are admitted, and
	// every bucket must be there by then.
	set, err := s.rdb.SetNX(ctx, bucketsKey(sku), buckets, 0).Result()
	if err != nil {
		return RestoreResult{}, fmt.Errorf("restore %s: write bucket count: %w", sku, err)
	}
	res := RestoreResult{Restored: set, Buckets: buckets}
	if set {
		// Clear any stale sold-out flag and tell API instances to drop
		// their cached sold-out answer: stock is back.
		if err := s.bump(ctx, sku); err != nil {
			return RestoreResult{}, fmt.Errorf("restore %s: bump: %w", sku, err)
		}
	}
	if err := s.fillUnits(ctx, sku, &res); err != nil {
		return RestoreResult{}, err
	}
	return res, nil
}

func (s *Store) fillUnits(ctx context.Context, sku string, res *RestoreResult) error {
	snap, err := s.Snapshot(ctx, sku)
	if err != nil {
		return fmt.Errorf("restore %s: read back: %w", sku, err)
	}
	res.Buckets, res.Units = snap.Buckets, snap.Units
	return nil
}

// ClaimCorrection takes the reconcile fence for correctionID if it still
// has the value fence (the one its observations read), moving it on. It
// returns false when another correction or a restore moved it first; the
// caller must then not correct. Idempotent per correctionID.
func (s *Store) ClaimCorrection(ctx context.Context, sku string, fence int64, correctionID string) (_ bool, err error) {
	defer codeOutage(&err)
	if err := validateSKU(sku); err != nil {
		return false, fmt.Errorf("claim correction %s: %w", sku, err)
	}
	if correctionID == "" {
		return false, fmt.Errorf("claim correction %s: %w", sku, invalidf("empty correction id"))
	}
	ok, err := claimScript.Run(ctx, s.rdb, []string{reconcileFenceKey(sku), reconcileClaimKey(sku, correctionID)},
		fence, s.heldMs).Int64()
	if err != nil {
		return false, fmt.Errorf("claim correction %s: %w", sku, err)
	}
	return ok == 1, nil
}

// Adjust moves sku's buckets by delta units, relatively, once per
// correctionID: a positive delta is spread over the buckets, a negative one
// is taken from them (never below zero, so fewer may be removed when
// buyers emptied the buckets meanwhile). It returns the units moved. A
// retry with the same correctionID replays the first attempt's moves
// instead of repeating them (adjust.lua markers, kept for the held TTL).
//
// Adding stock bumps gen, clearing the sold-out flag: buyers turned away
// must come back.
func (s *Store) Adjust(ctx context.Context, sku string, delta int64, correctionID string) (_ int64, err error) {
	defer codeOutage(&err)
	if err := validateSKU(sku); err != nil {
		return 0, fmt.Errorf("adjust %s: %w", sku, err)
	}
	if correctionID == "" {
		return 0, fmt.Errorf("adjust %s: %w", sku, invalidf("empty correction id"))
	}
	if delta == 0 {
		return 0, nil
	}
	n, err := s.bucketCount(ctx, sku)
	if err != nil {
		return 0, fmt.Errorf("adjust %s: %w", sku, err)
	}
	// Start where the id points so repeated small corrections do not all
	// land on bucket 0.
	start := int(crc32.ChecksumIEEE([]byte(correctionID)) % uint32(n))

	if delta > 0 {
		var calls []scriptCall
		for k := range n {
			units := evenShare(delta, n, k)
			if units == 0 {
				continue
			}
			b := (start + k) % n
			calls = append(calls, scriptCall{
				keys: []string{stockKey(sku, b), adjustKey(sku, b, correctionID)},
				args: []any{units, s.heldMs},
			})
		}
		cmds, err := s.evalPipelined(ctx, adjustScript, calls)
		if err != nil {
			return 0, fmt.Errorf("adjust %s by %d: %w", sku, delta, err)
		}
		var moved int64
		for i, cmd := range cmds {
			v, err := cmd.Int64()
			if err != nil {
				return 0, fmt.Errorf("adjust %s by %d: call %d: %w", sku, delta, i, err)
			}
			moved += v
		}
		if err := s.bump(ctx, sku); err != nil {
			return moved, fmt.Errorf("adjust %s: bump: %w", sku, err)
		}
		return moved, nil
	}

	// Removing walks the buckets one by one, each taking what is still
	// missing, so the total removed never exceeds -delta. A replay walks the
	// same buckets and meets the same markers.
	need := -delta
	var moved int64
	for k := 0; k < n && need > 0; k++ {
		b := (start + k) % n
		v, err := adjustScript.Run(ctx, s.rdb, []string{stockKey(sku, b), adjustKey(sku, b, correctionID)},
			-need, s.heldMs).Int64()
		if err != nil {
			return moved, fmt.Errorf("adjust %s by %d: bucket %d: %w", sku, delta, b, err)
		}
		moved += v
		need += v
	}
	return moved, nil
}
