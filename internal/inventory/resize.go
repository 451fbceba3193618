package inventory

// Resize changes a SKU's bucket count while the sale runs, moving no unit
// out of Redis and losing none. Under a per-SKU lock it finishes moves a
// crashed call left in transit, switches the count and records the old one
// (layout.lua), sweeps removed buckets into live ones and evens the rest out
// (move.go), then bumps gen. The protocol, and why no unit is lost or
// invented and no order is served twice, is in docs/design/buckets.md.

import (
	"context"
	"crypto/rand"
	"fmt"
	"time"

	"github.com/flashsale/flashsale"
)

const (
	// resizeLockTTL bounds how long a crashed Resize blocks the next. A
	// Resize is a handful of pipelines, far below this.
	resizeLockTTL = 30 * time.Second
	// resizeLockWait is how long Resize waits for a running one to end.
	resizeLockWait = 5 * time.Second
)

// ResizeResult is what Resize did.
type ResizeResult struct {
	SKU      string `json:"sku_id"`
	Buckets  int    `json:"buckets"`
	Previous int    `json:"previous_buckets"`
	// Moved counts units moved between buckets by this call (including
	// moves of earlier, crashed calls it finished).
	Moved int64 `json:"moved"`
	// RedisAvailable is the sum of the live buckets read back at the end; a
	// snapshot, since buyers keep taking.
	RedisAvailable int64 `json:"redis_available"`
}

// Resize changes sku's bucket count to buckets while the sale runs, moving
// no unit out of Redis and losing none; see docs/design/buckets.md. It is
// safe to retry: a retry finishes what a crashed call left in transit.
// Error codes: UnknownSKU (never preheated), Invalid, ResizeBusy (another
// Resize held the lock for resizeLockWait).
func (s *Store) Resize(ctx context.Context, sku string, buckets int) (_ ResizeResult, err error) {
	defer codeOutage(&err)
	if err := validateSKU(sku); err != nil {
		return ResizeResult{}, fmt.Errorf("resize %s: %w", sku, err)
	}
	if err := flashsale.CheckBuckets(buckets); err != nil {
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

	reply, err := s.switchLayout(ctx, sku, before, buckets)
	if err != nil {
		return res, fmt.Errorf("resize %s: %w", sku, err)
	}
	res.Previous = int(reply[0])
	highest := int(reply[1])
	s.layouts.forget(sku) // refused at its next take anyway; spare that round trip

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
	res.RedisAvailable = st.Available
	return res, nil
}

// switchLayout is step 2 of the protocol: stamp every bucket a layout old
// or new can lead a buyer to with the next epoch, then switch the count,
// history and epoch in one step (layout.lua). Stamping first is what
// makes cached layouts safe: once layout.lua ran, no take under the old
// epoch can succeed in any of those buckets (layoutcache.go). layout.lua
// refuses when the epoch moved since it was read (a Resize that outlived
// its lock, a Preheat); then the stamps are written again for the epoch
// after the current one. It returns layout.lua's {previous, highest}.
func (s *Store) switchLayout(ctx context.Context, sku string, before layout, buckets int) ([]int64, error) {
	epoch := before.epoch
	for range 5 {
		next := nextEpoch(epoch)
		if err := s.stampBuckets(ctx, sku, max(before.probe, buckets), next); err != nil {
			return nil, err
		}
		reply, err := layoutScript.Run(ctx, s.rdb, []string{bucketsKey(sku), layoutsKey(sku), epochKey(sku)},
			buckets, epoch, next).Int64Slice()
		if err != nil {
			return nil, fmt.Errorf("switch count: %w", err)
		}
		if len(reply) != 2 {
			return nil, fmt.Errorf("switch count: unexpected reply %v", reply)
		}
		switch {
		case reply[0] == 0:
			return nil, flashsale.Errorf(flashsale.UnknownSKU, "unknown sku")
		case reply[0] == -1:
			// The epoch moved; so may have the history: read both again.
			if before, err = s.layout(ctx, sku); err != nil {
				return nil, err
			}
			epoch = before.epoch
			continue
		}
		return reply, nil
	}
	return nil, fmt.Errorf("switch count: the layout epoch keeps moving")
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
			return nil, flashsale.Errorf(flashsale.ResizeBusy, "another resize of this sku is running")
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
