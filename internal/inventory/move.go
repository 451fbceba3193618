package inventory

// The move engine: units carried between two buckets of a SKU, which live in
// different slots, as two idempotent halves joined by a move id (moveout.lua
// takes and records the move as pending, movein.lua puts once, then the
// pending entry goes). Resize plans sweeps and spreads with it; a release or
// restock whose units landed in a bucket a shrink removed sweeps them with
// it (announce); Snapshot counts what is still in transit (inTransit). See
// "Moves" in docs/design/buckets.md.

import (
	"context"
	"crypto/rand"
	"fmt"
	"strconv"
	"strings"

	"github.com/flashsale/flashsale"

	"github.com/redis/go-redis/v9"
)

const (
	// moveAll asks moveout.lua for every unit of a bucket. It fits a Lua
	// double exactly and exceeds any stock.
	moveAll = int64(1) << 50
	// announceRounds bounds how often a release chases a concurrent shrink
	// that keeps removing the bucket its units were swept into.
	announceRounds = 4
)

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
			if !ok || err1 != nil || err2 != nil || k <= 0 || d < 0 || d >= flashsale.MaxBuckets {
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
	if flashsale.ErrorCode(err) == flashsale.UnknownSKU {
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
