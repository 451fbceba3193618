package inventory

// Resizing a SKU's buckets mid-sale.
//
// # Protocol
//
// Resize(sku, N') changes the bucket count while buyers reserve and release,
// in five steps, under a per-SKU lock (SET NX with a TTL, so one Resize runs
// at a time and a crashed one does not block the next for long):
//
//  1. Finish every move left in transit by a crashed Resize or Release
//     sweep (see "Moves" below), in every bucket the SKU ever had.
//  2. layout.lua, in the SKU slot: append the old and the new count to the
//     layouts list (fs:{sku:<sku>}:layouts, every count the SKU has had)
//     and SET the count to N'. One atomic step, so whoever reads the new
//     count reads a history that names the old one too.
//  3. Sweep: move all stock of every bucket in N'..H-1 (H = highest count
//     ever) into bucket b % N'. Buckets a shrink removes are left empty;
//     their order markers stay where they are.
//  4. Spread: move units from buckets above an even share into buckets
//     below it, so an expansion's new (empty) buckets take their part of
//     the load at once.
//  5. bump.lua: gen+1, sold-out flag cleared, change published.
//
// # Moves
//
// A move between bucket A and bucket B crosses two slots, so it is two
// scripts, each atomic in its own slot, joined by a random move id M:
//
//   - moveout.lua (A's slot) DECRBYs min(wanted, stock) = k from A and, in
//     the same step, records "k:B" under M twice: a marker that makes a
//     repeat of M answer k without taking again, and an entry in A's
//     pending-moves hash, which is how anyone finds a move still in transit.
//   - movein.lua (B's slot) INCRBYs k into B unless B's marker for M
//     exists, and sets it: putting M any number of times adds k once.
//   - Then the pending entry is deleted (HDEL). A crash before that leaves
//     the entry, and the next Resize (step 1) or Release sweep puts it
//     (idempotently) and deletes it; a Resize retried from scratch
//     therefore finishes a half-done move and never moves a unit twice.
//     Its new moves are planned from the stock as it is now, which already
//     reflects every finished move.
//
// # Orders that hold units in a removed bucket
//
// Markers are never moved: an order's held units stay accounted in the
// bucket it took them from, even when a shrink removed that bucket.
//   - Release (and Reserve's give-back) probe max(N, H) buckets, H read
//     from the layouts list in the same MGET as N, so every marker is
//     found. Units it gives back to a removed bucket are swept into a live
//     one: bump.lua returns the count it read after the give-back landed;
//     if the bucket is at or beyond that count, Release moves its stock
//     (b % N) and bumps again. Either Release's bump sees the new count and
//     Release sweeps, or it saw the old count, so layout.lua ran after the
//     give-back and Resize's step 3 (which runs after layout.lua) takes
//     the units. A Release that dies in between sweeps on its retry; none
//     at all leaves the units for the next Resize.
//   - A retried Reserve must walk the buckets its first attempt walked, or
//     it would take a second time elsewhere. When the SKU was ever
//     resized, Reserve first reads (one pipeline) the order's marker in its
//     start bucket crc32(order)%M for every count M in the layouts list:
//     take.lua always leaves a marker in the first bucket it probes, so a
//     marker there means the first attempt ran under M, and the retry
//     walks M's order (then any buckets beyond M up to N). That read is
//     one extra round trip per Reserve of a SKU that was ever resized; a
//     SKU never resized pays nothing for it.
//
// # Why no unit is lost or invented
//
// Every unit is at every moment in exactly one of: a bucket's stock, an
// order's held marker, or a pending move (taken from A, not yet in B).
// Takes, releases and both halves of a move each transfer units between
// those places atomically inside one slot, and each is idempotent by its
// marker, so a retry never repeats a transfer. Hence sum(buckets) +
// held + in transit is unchanged by a resize, and a Resize leaves nothing
// of its own in transit when it returns (its puts come before it returns,
// and step 1 finished what crashed movers left). No unit is created, so Redis can never
// offer more than the units it had: a resize cannot oversell (and MySQL's
// `available >= qty` stays the final guard regardless).
//
// # What a buyer may notice
//
// Units in transit for a few milliseconds are in no bucket: a buyer who
// probes every bucket just then may be answered sold out while the last
// units move, and may set the sold-out flag. Step 5 (and a Release sweep's
// second bump) runs after the units landed, moves gen and deletes the flag,
// and soldout.lua refuses a flag from an observation older than that gen.
// The reconciler's observations carry the bucket count and gen, so one
// that spans a resize is torn and not acted on; and Snapshot counts units
// in transit (pending moves whose put has not landed) as Redis's, so a move
// left half-done by a crash is never mistaken for lost stock and added a
// second time.
//
// Known limits: the lock has a TTL (resizeLockTTL); a Resize running longer
// than that may overlap the next, which still loses no unit (every move is
// atomic per slot) but may leave stock in buckets beyond the final count
// until the next Resize. Move markers live for the held TTL, so a move
// must be finished within it; an abandoned one is finished by any Resize
// in that time.

import (
	"context"
	"crypto/rand"
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/flashsale/flashsale"

	"github.com/redis/go-redis/v9"
)

// ErrResizeBusy means another Resize of the same SKU holds the lock.
var ErrResizeBusy error = &flashsale.Error{Code: flashsale.ResizeBusy, Message: "another resize of this sku is running"}

const (
	// resizeLockTTL bounds how long a crashed Resize blocks the next. A
	// Resize is a handful of pipelines, far below this.
	resizeLockTTL = 30 * time.Second
	// resizeLockWait is how long Resize waits for a running one to end.
	resizeLockWait = 5 * time.Second
	// moveAll asks moveout.lua for every unit of a bucket. It fits a Lua
	// double exactly and exceeds any stock.
	moveAll = int64(1) << 50
	// announceRounds bounds how often a release chases a concurrent shrink
	// that keeps removing the bucket its units were swept into.
	announceRounds = 4
)

// layoutsKey lists every bucket count the SKU has had since its first
// resize, comma separated ("16,64,4"); absent for a SKU never resized.
func layoutsKey(sku string) string { return "fs:{sku:" + sku + "}:layouts" }

// resizeLockKey serializes Resize calls of one SKU.
func resizeLockKey(sku string) string { return "fs:{sku:" + sku + "}:resize:lock" }

// moveOutKey marks that move id took units out of bucket i ("<k>:<dest>").
func moveOutKey(sku string, bucket int, id string) string {
	return bucketTag(sku, bucket) + ":moveout:" + id
}

// moveInKey marks that move id put its units into bucket i.
func moveInKey(sku string, bucket int, id string) string {
	return bucketTag(sku, bucket) + ":movein:" + id
}

// pendingMovesKey is bucket i's hash of moves taken out of it and not yet
// known to have landed: move id -> "<k>:<dest>".
func pendingMovesKey(sku string, bucket int) string { return bucketTag(sku, bucket) + ":moves" }

var (
	//go:embed layout.lua
	layoutSrc string
	//go:embed moveout.lua
	moveOutSrc string
	//go:embed movein.lua
	moveInSrc string
	//go:embed unlock.lua
	unlockSrc string

	layoutScript  = redis.NewScript(layoutSrc)
	moveOutScript = redis.NewScript(moveOutSrc)
	moveInScript  = redis.NewScript(moveInSrc)
	unlockScript  = redis.NewScript(unlockSrc)
)

// layout is what a per-order call needs to know about a SKU's buckets.
type layout struct {
	n     int   // current count: buyers take from 0..n-1
	probe int   // buckets a marker may live in: max(n, every earlier count)
	past  []int // every count from the layouts list (empty: never resized)
}

// parseLayout reads the bucket count and layouts list from an MGET reply.
func parseLayout(count, layouts any) (layout, error) {
	n, err := parseBuckets(count)
	if err != nil {
		return layout{}, err
	}
	lay := layout{n: n, probe: n}
	if layouts == nil {
		return lay, nil
	}
	s, ok := layouts.(string)
	if !ok {
		return layout{}, fmt.Errorf("layouts has type %T", layouts)
	}
	for f := range strings.SplitSeq(s, ",") {
		m, err := strconv.Atoi(f)
		if err != nil || m < 1 || m > MaxBuckets {
			return layout{}, fmt.Errorf("corrupt layouts %q", s)
		}
		lay.past = append(lay.past, m)
		lay.probe = max(lay.probe, m)
	}
	return lay, nil
}

// layout reads the count and layouts list with one MGET.
func (s *Store) layout(ctx context.Context, sku string) (layout, error) {
	vals, err := s.rdb.MGet(ctx, bucketsKey(sku), layoutsKey(sku)).Result()
	if err != nil {
		return layout{}, err
	}
	return parseLayout(vals[0], vals[1])
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

// walkFor picks the walk of Reserve: the current count's, unless the SKU
// was resized and the order's start bucket under an earlier count holds
// its marker (a retry of an attempt made before the resize).
func (s *Store) walkFor(ctx context.Context, sku, orderID string, lay layout) ([]int, error) {
	m, err := s.markedCount(ctx, sku, orderID, lay, orderKey)
	if err != nil {
		return nil, fmt.Errorf("find the layout of an earlier attempt: %w", err)
	}
	return walkOf(orderID, m, lay.n), nil
}

// markedCount is the count, current or earlier, under which an earlier
// attempt of id left its marker in its start bucket crc32(id)%M, or the
// current count when none did. The candidates are checked in one
// pipeline; a SKU never resized has one candidate and costs no read.
func (s *Store) markedCount(ctx context.Context, sku, id string, lay layout, marker func(sku string, bucket int, id string) string) (int, error) {
	if len(lay.past) == 0 {
		return lay.n, nil
	}
	counts := append([]int{lay.n}, lay.past...)
	pipe := s.rdb.Pipeline()
	cmds := make([]*redis.IntCmd, len(counts))
	for i, m := range counts {
		cmds[i] = pipe.Exists(ctx, marker(sku, startBucket(id, m), id))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return 0, err
	}
	for i, m := range counts {
		if cmds[i].Val() == 1 {
			return m, nil
		}
	}
	return lay.n, nil
}

// ResizeResult is what Resize did.
type ResizeResult struct {
	SKU      string `json:"sku_id"`
	Buckets  int    `json:"buckets"`
	Previous int    `json:"previous_buckets"`
	// Moved counts units moved between buckets by this call (including
	// moves of earlier, crashed calls it finished).
	Moved int64 `json:"moved"`
	// RedisTotal is the sum of the live buckets read back at the end; a
	// snapshot, since buyers keep taking.
	RedisTotal int64 `json:"redis_total"`
}

// Resize changes sku's bucket count to buckets while the sale runs, moving
// no unit out of Redis and losing none; see the protocol at the top of this
// file. It is safe to retry: a retry finishes what a crashed call left in
// transit. Errors: ErrUnknownSKU (never preheated), ErrInvalidArgument,
// ErrResizeBusy (another Resize held the lock for resizeLockWait).
func (s *Store) Resize(ctx context.Context, sku string, buckets int) (ResizeResult, error) {
	if err := validateSKU(sku); err != nil {
		return ResizeResult{}, fmt.Errorf("resize %s: %w", sku, err)
	}
	if err := validateBuckets(buckets); err != nil {
		return ResizeResult{}, fmt.Errorf("resize %s: %w", sku, err)
	}
	unlock, err := s.lockResize(ctx, sku)
	if err != nil {
		return ResizeResult{}, fmt.Errorf("resize %s: %w", sku, err)
	}
	defer unlock()

	before, err := s.layout(ctx, sku)
	if err != nil {
		return ResizeResult{}, fmt.Errorf("resize %s: %w", sku, err)
	}
	res := ResizeResult{SKU: sku, Buckets: buckets}
	if res.Moved, err = s.finishPending(ctx, sku, upTo(max(before.probe, buckets))); err != nil {
		return res, fmt.Errorf("resize %s: finish earlier moves: %w", sku, err)
	}

	reply, err := layoutScript.Run(ctx, s.rdb, []string{bucketsKey(sku), layoutsKey(sku)}, buckets).Int64Slice()
	if err != nil {
		return res, fmt.Errorf("resize %s: switch count: %w", sku, err)
	}
	if len(reply) != 2 {
		return res, fmt.Errorf("resize %s: switch count: unexpected reply %v", sku, reply)
	}
	if reply[0] == 0 {
		return res, fmt.Errorf("resize %s: %w", sku, ErrUnknownSKU)
	}
	res.Previous = int(reply[0])
	highest := int(reply[1])

	var removed []int
	for b := buckets; b < highest; b++ {
		removed = append(removed, b)
	}
	moved, err := s.runMoves(ctx, sku, sweepMoves(removed, buckets))
	res.Moved += moved
	if err != nil {
		return res, fmt.Errorf("resize %s: sweep removed buckets: %w", sku, err)
	}
	moved, err = s.spread(ctx, sku, buckets)
	res.Moved += moved
	if err != nil {
		return res, fmt.Errorf("resize %s: spread: %w", sku, err)
	}
	// After the last put: a sold-out flag set while units were in transit
	// goes, and API instances drop their cached sold-out answer.
	if err := s.bump(ctx, sku); err != nil {
		return res, fmt.Errorf("resize %s: bump: %w", sku, err)
	}
	st, err := s.Stock(ctx, sku)
	if err != nil {
		return res, fmt.Errorf("resize %s: read back: %w", sku, err)
	}
	res.RedisTotal = st.Available
	return res, nil
}

// lockResize takes the SKU's resize lock, waiting up to resizeLockWait,
// and returns the function that gives it back.
func (s *Store) lockResize(ctx context.Context, sku string) (func(), error) {
	token := rand.Text()
	deadline := time.Now().Add(resizeLockWait)
	for {
		ok, err := s.rdb.SetNX(ctx, resizeLockKey(sku), token, resizeLockTTL).Result()
		if err != nil {
			return nil, fmt.Errorf("take resize lock: %w", err)
		}
		if ok {
			break
		}
		if time.Now().After(deadline) {
			return nil, ErrResizeBusy
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return func() {
		// The caller's context may be done; the lock must still go, or
		// the next Resize waits for the TTL.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer cancel()
		_ = unlockScript.Run(ctx, s.rdb, []string{resizeLockKey(sku)}, token).Err() // expires anyway
	}, nil
}

// upTo lists buckets 0..n-1.
func upTo(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// move is one planned transfer of up to want units from bucket src to dst.
type move struct {
	src, dst int
	want     int64
}

// sweepMoves empties each of the buckets into bucket b % n.
func sweepMoves(buckets []int, n int) []move {
	moves := make([]move, 0, len(buckets))
	for _, b := range buckets {
		moves = append(moves, move{src: b, dst: b % n, want: moveAll})
	}
	return moves
}

// spread evens out buckets 0..n-1: units above an even share move to
// buckets below it. The plan comes from a snapshot; buyers taking
// meanwhile only make moveout.lua move fewer units, never more.
func (s *Store) spread(ctx context.Context, sku string, n int) (int64, error) {
	st, err := s.Stock(ctx, sku)
	if err != nil {
		return 0, err
	}
	if st.Buckets != n {
		return 0, nil // a concurrent change of the count; nothing to even out against
	}
	var total int64
	for _, v := range st.PerBucket {
		total += max(v, 0)
	}
	want := func(b int) int64 { return evenShare(total, n, b) }
	var moves []move
	dst := 0
	for src, v := range st.PerBucket {
		excess := v - want(src)
		for excess > 0 && dst < n {
			deficit := want(dst) - max(st.PerBucket[dst], 0)
			if deficit <= 0 || dst == src {
				dst++
				continue
			}
			k := min(excess, deficit)
			moves = append(moves, move{src: src, dst: dst, want: k})
			st.PerBucket[dst] += k
			excess -= k
		}
	}
	return s.runMoves(ctx, sku, moves)
}

// runMoves carries out moves: every take in one pipeline, every put of
// what was taken in a second, and the pending entries' deletion in a
// third. It returns the units that landed.
func (s *Store) runMoves(ctx context.Context, sku string, moves []move) (int64, error) {
	if len(moves) == 0 {
		return 0, nil
	}
	ids := make([]string, len(moves))
	calls := make([]scriptCall, len(moves))
	for i, m := range moves {
		ids[i] = rand.Text()
		calls[i] = scriptCall{
			keys: []string{stockKey(sku, m.src), moveOutKey(sku, m.src, ids[i]), pendingMovesKey(sku, m.src)},
			args: []any{m.want, m.dst, s.heldMs, ids[i]},
		}
	}
	cmds, err := s.evalPipelined(ctx, moveOutScript, calls)
	if err != nil {
		return 0, fmt.Errorf("take out: %w", err)
	}
	var inTransit []pendingMove
	for i, cmd := range cmds {
		k, err := cmd.Int64()
		if err != nil {
			return 0, fmt.Errorf("take out of bucket %d: %w", moves[i].src, err)
		}
		if k > 0 {
			inTransit = append(inTransit, pendingMove{id: ids[i], src: moves[i].src, dst: moves[i].dst, units: k})
		}
	}
	return s.land(ctx, sku, inTransit)
}

// pendingMove is a move taken out of src and maybe not yet put into dst.
type pendingMove struct {
	id       string
	src, dst int
	units    int64
}

// land puts each move's units into its destination (idempotent by move
// id) and then deletes its pending entry. It returns the units of all the
// moves, whether this call or an earlier one put them.
func (s *Store) land(ctx context.Context, sku string, moves []pendingMove) (int64, error) {
	if len(moves) == 0 {
		return 0, nil
	}
	calls := make([]scriptCall, len(moves))
	for i, m := range moves {
		calls[i] = scriptCall{
			keys: []string{stockKey(sku, m.dst), moveInKey(sku, m.dst, m.id)},
			args: []any{m.units, s.heldMs},
		}
	}
	cmds, err := s.evalPipelined(ctx, moveInScript, calls)
	if err != nil {
		return 0, fmt.Errorf("put in: %w", err)
	}
	var units int64
	for i, cmd := range cmds {
		if err := cmd.Err(); err != nil {
			return 0, fmt.Errorf("put into bucket %d: %w", moves[i].dst, err)
		}
		units += moves[i].units
	}
	pipe := s.rdb.Pipeline()
	for _, m := range moves {
		pipe.HDel(ctx, pendingMovesKey(sku, m.src), m.id)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		// Landed; a later finishPending puts again (a no-op) and deletes.
		return units, fmt.Errorf("clear pending moves: %w", err)
	}
	return units, nil
}

// finishPending lands every move still pending in the given buckets.
func (s *Store) finishPending(ctx context.Context, sku string, buckets []int) (int64, error) {
	if len(buckets) == 0 {
		return 0, nil
	}
	moves, err := s.pendingMoves(ctx, sku, buckets)
	if err != nil {
		return 0, err
	}
	return s.land(ctx, sku, moves)
}

// pendingMoves reads the pending-moves hashes of the buckets in one
// pipeline.
func (s *Store) pendingMoves(ctx context.Context, sku string, buckets []int) ([]pendingMove, error) {
	pipe := s.rdb.Pipeline()
	cmds := make([]*redis.MapStringStringCmd, len(buckets))
	for i, b := range buckets {
		cmds[i] = pipe.HGetAll(ctx, pendingMovesKey(sku, b))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, fmt.Errorf("read pending moves: %w", err)
	}
	var moves []pendingMove
	for i, cmd := range cmds {
		for id, rec := range cmd.Val() {
			ks, ds, ok := strings.Cut(rec, ":")
			k, err1 := strconv.ParseInt(ks, 10, 64)
			d, err2 := strconv.Atoi(ds)
			if !ok || err1 != nil || err2 != nil || k <= 0 || d < 0 || d >= MaxBuckets {
				return nil, fmt.Errorf("corrupt pending move %s in bucket %d: %q", id, buckets[i], rec)
			}
			moves = append(moves, pendingMove{id: id, src: buckets[i], dst: d, units: k})
		}
	}
	return moves, nil
}

// announce runs after units went back into the buckets in heldIn: it
// bumps gen (clearing the sold-out flag) and, if any of those buckets is
// at or beyond the count bump.lua read (removed by a shrink), sweeps them
// into live buckets, finishing any earlier sweep of theirs left in
// transit, and bumps again; a concurrent shrink may remove the
// destination too, hence the loop.
func (s *Store) announce(ctx context.Context, sku string, heldIn []int) error {
	for range announceRounds {
		n, err := s.bumpCount(ctx, sku)
		if err != nil {
			return err
		}
		var strays []int
		for _, b := range heldIn {
			if n > 0 && b >= n {
				strays = append(strays, b)
			}
		}
		if len(strays) == 0 {
			return nil
		}
		if _, err := s.finishPending(ctx, sku, strays); err != nil {
			return fmt.Errorf("sweep bucket(s) %v: %w", strays, err)
		}
		if _, err := s.runMoves(ctx, sku, sweepMoves(strays, n)); err != nil {
			return fmt.Errorf("sweep bucket(s) %v: %w", strays, err)
		}
		heldIn = heldIn[:0]
		for _, b := range strays {
			heldIn = append(heldIn, b%n)
		}
	}
	return s.bump(ctx, sku)
}

// inTransit sums the units of moves taken out of a bucket and not yet put
// into their destination, over every bucket the SKU ever had. Snapshot
// counts them as Redis's: they will land in a bucket, and a reconciler
// that saw them as missing would add them a second time. A SKU never
// resized has no moves and costs one GET.
func (s *Store) inTransit(ctx context.Context, sku string) (int64, error) {
	lay, err := s.layout(ctx, sku)
	if errors.Is(err, ErrUnknownSKU) {
		return 0, nil // lost since the caller read the count: nothing to find
	}
	if err != nil {
		return 0, err
	}
	if len(lay.past) == 0 {
		return 0, nil
	}
	moves, err := s.pendingMoves(ctx, sku, upTo(lay.probe))
	if err != nil || len(moves) == 0 {
		return 0, err
	}
	pipe := s.rdb.Pipeline()
	landed := make([]*redis.IntCmd, len(moves))
	for i, m := range moves {
		// Put but not yet acknowledged: already in a bucket.
		landed[i] = pipe.Exists(ctx, moveInKey(sku, m.dst, m.id))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return 0, fmt.Errorf("read move markers: %w", err)
	}
	var units int64
	for i, m := range moves {
		if landed[i].Val() == 0 {
			units += m.units
		}
	}
	return units, nil
}
