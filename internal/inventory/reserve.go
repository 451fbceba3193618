package inventory

import (
	"context"
	"errors"
	"fmt"

	"github.com/flashsale/flashsale"
)

// Reserve is ReserveFor with no buyer: nothing is counted against a
// per-buyer limit. For callers that reserve on nobody's behalf (benchmarks,
// tests of the buckets); orders use ReserveFor.
func (s *Store) Reserve(ctx context.Context, orderID, sku string, qty int64) (_ flashsale.Reservation, err error) {
	defer codeOutage(&err)
	return s.ReserveFor(ctx, "", orderID, sku, qty)
}

// ReserveFor takes qty units of sku for orderID of buyer userID.
//
// Before any bucket is touched, the units are counted against the buyer's
// limit for the current sale (limit.go): an order that would give the buyer
// more than the SKU's per-buyer limit is refused with a LimitExceeded error
// holding nothing. The count is idempotent per order like the takes, and
// every give-back below (and Release) returns it. A SKU without a limit
// (read with the layout) costs no call for it.
//
// It starts at bucket crc32(orderID)%N and probes (start+k)%N for
// k = 0..N-1, taking min(still needed, bucket stock) from each until the
// order is served, so an empty bucket never refuses a buyer while other
// buckets hold stock (after a resize, a retry walks the layout its first
// attempt walked: walkFor in layout.go). If all buckets together cannot
// serve qty, every take of this order is given back, the sold-out flag is
// set when the buckets are then seen empty, and a SoldOut error is
// returned: a reservation is never partial.
//
// The layout (N, the resize history) comes from a per-process cache, so an
// order served by its first bucket costs one script call. Every take under
// a cached layout is checked against the bucket's stamp of the layout
// epoch; a refused one makes Reserve read the layout and walk again, as a
// retry would (layoutcache.go).
//
// Reserve is idempotent per (orderID, sku) as long as qty is the same: a retry
// replays the markers the first attempt left and returns the same Reservation
// without moving stock; a retry of an order that ended sold out returns
// SoldOut again. Reserve after Release of the same order returns
// AlreadyReleased. If Reserve fails with a transport error part-way, the units
// taken so far stay held under their markers: retry Reserve to finish, or
// Release to give them back.
//
// Reserve ignores the sold-out flag on purpose: the flag may be set while a
// retried order already holds its units, and the retry must get them.
func (s *Store) ReserveFor(ctx context.Context, userID, orderID, sku string, qty int64) (_ flashsale.Reservation, err error) {
	defer codeOutage(&err)
	if err := validateOrder(orderID, sku); err != nil {
		return flashsale.Reservation{}, fmt.Errorf("reserve %s: %w", sku, err)
	}
	if qty <= 0 {
		return flashsale.Reservation{}, fmt.Errorf("reserve %s: %w", sku, invalidf("quantity must be positive, got %d", qty))
	}
	tookCached := false
	if c, ok := s.layouts.get(sku); ok {
		res, took, err := s.reserveUnder(ctx, userID, orderID, sku, qty, c, true, false)
		if !errors.Is(err, errStaleLayout) {
			return res, err
		}
		// The layout changed under the cache: read it and walk again. The
		// takes made so far are this order's markers, which the walk
		// below replays (or, after a resize, finds: walkFor).
		s.layouts.forget(sku)
		tookCached = took
	}
	c, err := s.readLayout(ctx, sku)
	if err != nil {
		return flashsale.Reservation{}, fmt.Errorf("reserve %s: read layout: %w", sku, err)
	}
	res, _, err := s.reserveUnder(ctx, userID, orderID, sku, qty, c, false, tookCached)
	return res, err
}

// errStaleLayout is take.lua's refusal of a cached layout (-4).
var errStaleLayout = errors.New("stale layout")

// reserveUnder is one walk of ReserveFor under layout c: cached (every
// take checked against the bucket's stamp; errStaleLayout when refused)
// or just read (no check). took reports whether this walk took units
// before an errStaleLayout; mayHold says an earlier walk of this call
// did, so a limit refusal must give them back.
func (s *Store) reserveUnder(ctx context.Context, userID, orderID, sku string, qty int64, c *cachedLayout, cached, mayHold bool) (_ flashsale.Reservation, took bool, _ error) {
	lay := c.lay
	// After a resize a retry must walk the buckets its first attempt
	// walked (layout.go); for a SKU never resized this is the plain walk.
	walk, err := s.walkFor(ctx, sku, orderID, lay)
	if err != nil {
		return flashsale.Reservation{}, false, fmt.Errorf("reserve %s: %w", sku, err)
	}
	// The limit first: an order over it must hold nothing, not take units
	// other buyers are turned away from while MySQL has yet to refuse it.
	if c.hasLimit {
		if err := s.claim(ctx, userID, orderID, sku, qty, false); err != nil {
			if mayHold && flashsale.ErrorCode(err) == flashsale.LimitExceeded {
				// Only when the limit appeared while a cached walk (one
				// that knew none) was taking; that walk's units go back.
				if _, _, gerr := s.giveBack(ctx, orderID, sku, lay, modeSoldOut); gerr != nil {
					return flashsale.Reservation{}, false, fmt.Errorf("reserve %s: %w (giving back: %v)", sku, err, gerr)
				}
			}
			return flashsale.Reservation{}, false, fmt.Errorf("reserve %s: %w", sku, err)
		}
	}

	epoch := epochArg(lay, cached)
	need := qty
	var parts []flashsale.Part
	for _, b := range walk {
		if need == 0 {
			break
		}
		res, err := takeScript.Run(ctx, s.rdb,
			[]string{stockKey(sku, b), orderKey(sku, b, orderID), stampKey(sku, b)},
			need, s.heldMs, s.zeroMs, epoch).Int64Slice()
		if err != nil {
			return flashsale.Reservation{}, need < qty, fmt.Errorf("reserve %s: take from bucket %d: %w", sku, b, err)
		}
		if len(res) < 2 {
			return flashsale.Reservation{}, need < qty, fmt.Errorf("reserve %s: take from bucket %d: unexpected reply %v", sku, b, res)
		}
		switch res[0] {
		case -4:
			if cached {
				return flashsale.Reservation{}, need < qty, errStaleLayout
			}
			return flashsale.Reservation{}, need < qty, fmt.Errorf("reserve %s: take from bucket %d: refused a layout read just now", sku, b)
		case -2:
			// Released while (or before) we probed. Release visits every
			// bucket, but run it again so nothing this call took can outlive
			// the release even if the two interleaved.
			if _, _, err := s.giveBack(ctx, orderID, sku, lay, modeRelease); err != nil {
				return flashsale.Reservation{}, false, fmt.Errorf("reserve %s: give back after release: %w", sku, err)
			}
			return flashsale.Reservation{}, false, fmt.Errorf("reserve %s: order %s: %w", sku, orderID, flashsale.Errorf(flashsale.AlreadyReleased, "reservation already released"))
		case -3:
			// An earlier attempt of this order ended sold out; repeat that.
			if _, _, err := s.giveBack(ctx, orderID, sku, lay, modeSoldOut); err != nil {
				return flashsale.Reservation{}, false, fmt.Errorf("reserve %s: give back: %w", sku, err)
			}
			return flashsale.Reservation{}, false, fmt.Errorf("reserve %s: %w", sku, flashsale.Errorf(flashsale.SoldOut, "sold out"))
		}
		got := res[0]
		if got > need {
			// Only a replay can return more than asked: the first attempt of
			// this order wanted more. The markers cannot say which quantity
			// is right, so refuse rather than guess; the units stay held.
			return flashsale.Reservation{}, false, fmt.Errorf("reserve %s: %w", sku, invalidf(
				"order %s already holds %d units in bucket %d but only %d are still wanted: retried with a different quantity",
				orderID, got, b, need))
		}
		if got > 0 {
			parts = append(parts, flashsale.Part{Bucket: b, Quantity: got})
			need -= got
		}
	}
	if need == 0 {
		return flashsale.Reservation{SKU: sku, Quantity: qty, Parts: parts}, false, nil
	}

	// Not enough in all buckets together: give back every take so the
	// reservation is all or nothing, and remember the outcome in the markers.
	_, held, err := s.giveBack(ctx, orderID, sku, lay, modeSoldOut)
	if err != nil {
		return flashsale.Reservation{}, false, fmt.Errorf("reserve %s: give back partial take: %w", sku, err)
	}
	soldOut := flashsale.Errorf(flashsale.SoldOut, "sold out")
	// If this order held units, giving them back bumped gen, so the SKU is
	// not empty and soldout.lua would refuse anyway; skip the round trips.
	if !held {
		if err := s.flagSoldOut(ctx, sku); err != nil {
			// The flag is only an optimisation; the answer stays sold out.
			return flashsale.Reservation{}, false, fmt.Errorf("reserve %s: %w (setting sold-out flag: %v)", sku, soldOut, err)
		}
	}
	return flashsale.Reservation{}, false, fmt.Errorf("reserve %s: %w", sku, soldOut)
}

// flagSoldOut sets the sold-out flag if every bucket is empty now. gen is
// read BEFORE the buckets (Available), so soldout.lua refuses if stock came
// back after any of them was read. The walk's own answers are not used as
// the observation: the walk ran before gen was read (its layout may come
// from the cache, which holds no gen), and replayed answers are older
// still. The cost, one MGET and one pipeline, is paid only by a buyer who
// found the SKU sold out without the flag, which the flag then spares the
// next ones.
func (s *Store) flagSoldOut(ctx context.Context, sku string) error {
	av, err := s.Available(ctx, sku)
	if err != nil {
		return err
	}
	if av.Units > 0 {
		return nil
	}
	_, err = s.MarkSoldOut(ctx, sku, av.Gen)
	return err
}

// Release returns every unit orderID holds in sku to the bucket it came
// from. It probes all N buckets (and, after a shrink, every bucket the SKU
// ever had: docs/design/buckets.md) with one pipeline of release.lua calls and
// is idempotent: it returns the units released by this call, so 0 on a
// retry. Buckets where the order held nothing get a tombstone, so a Reserve
// attempt of the same order still in flight cannot take stock afterwards.
// If the order held anything (now or earlier), bump.lua clears the sold-out
// flag and publishes on StockChangedChannel; repeating that on a retry
// covers a crash between the give-back and the bump. The order's units are
// then given back to its buyer's limit, once (limit.go).
func (s *Store) Release(ctx context.Context, orderID, sku string) (_ int64, err error) {
	defer codeOutage(&err)
	if err := validateOrder(orderID, sku); err != nil {
		return 0, fmt.Errorf("release %s: %w", sku, err)
	}
	lay, err := s.layout(ctx, sku)
	if err != nil {
		return 0, fmt.Errorf("release %s: %w", sku, err)
	}
	released, _, err := s.giveBack(ctx, orderID, sku, lay, modeRelease)
	if err != nil {
		return 0, fmt.Errorf("release %s: %w", sku, err)
	}
	return released, nil
}

// ReleaseHeld is Release that also says whether the order's markers show
// it held units at all (given back now or before). False when they expired
// (inventory.Options.HeldTTL after the take): a caller that must put the
// units back anyway (a refund a day after the sale) restocks them instead.
func (s *Store) ReleaseHeld(ctx context.Context, orderID, sku string) (_ int64, _ bool, err error) {
	defer codeOutage(&err)
	if err := validateOrder(orderID, sku); err != nil {
		return 0, false, fmt.Errorf("release %s: %w", sku, err)
	}
	lay, err := s.layout(ctx, sku)
	if err != nil {
		return 0, false, fmt.Errorf("release %s: %w", sku, err)
	}
	released, held, err := s.giveBack(ctx, orderID, sku, lay, modeRelease)
	if err != nil {
		return 0, false, fmt.Errorf("release %s: %w", sku, err)
	}
	return released, held, nil
}

// giveBack is releaseBuckets, then the order's count against its buyer's
// limit given back in the same mode. The units go back to the buckets
// first: a crash in between leaves the buyer counted (stricter), never a
// unit uncounted, and the retry (or the order's Release) finishes it.
func (s *Store) giveBack(ctx context.Context, orderID, sku string, lay layout, mode string) (int64, bool, error) {
	released, held, err := s.releaseBuckets(ctx, orderID, sku, lay, mode)
	if err != nil {
		return released, held, err
	}
	if _, err := s.unclaim(ctx, orderID, sku, mode); err != nil {
		return released, held, err
	}
	return released, held, nil
}

// releaseBuckets gives back the order's takes in mode (Release, or Reserve
// giving up sold out): release.lua on all lay.probe buckets in one
// pipeline. It returns the units returned now and whether the order had
// held any units at all (returned now or before). If it had, units came
// back, so announce bumps gen (buyers must not be turned away by the flag)
// and sweeps the buckets a shrink removed; a retry announces again, in
// case the first bump or sweep died.
func (s *Store) releaseBuckets(ctx context.Context, orderID, sku string, lay layout, mode string) (int64, bool, error) {
	calls := make([]scriptCall, lay.probe)
	for b := range calls {
		calls[b] = scriptCall{
			keys: []string{stockKey(sku, b), orderKey(sku, b, orderID)},
			args: []any{mode, s.heldMs},
		}
	}
	cmds, err := s.evalPipelined(ctx, releaseScript, calls)
	if err != nil {
		return 0, false, err
	}
	var released int64
	var heldIn []int // buckets the order held units in, now or before
	for b, cmd := range cmds {
		res, err := cmd.Int64Slice()
		if err != nil {
			return 0, false, fmt.Errorf("release bucket %d: %w", b, err)
		}
		if len(res) != 2 {
			return 0, false, fmt.Errorf("release bucket %d: unexpected reply %v", b, res)
		}
		status, k := res[0], res[1]
		if status == 1 {
			released += k
		}
		if status != 0 && k > 0 {
			heldIn = append(heldIn, b)
		}
	}
	held := len(heldIn) > 0
	if held {
		if err := s.announce(ctx, sku, heldIn); err != nil {
			return 0, true, fmt.Errorf("bump after give-back: %w", err)
		}
	}
	return released, held, nil
}

// validateOrder checks the ids every per-order call needs.
func validateOrder(orderID, sku string) error {
	if err := validateSKU(sku); err != nil {
		return err
	}
	if orderID == "" {
		return invalidf("empty order id")
	}
	return nil
}
