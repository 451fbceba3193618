package edge

// The quick sold-out answer: a one-item buy of a SKU this instance holds
// as sold out is answered from memory before anything else is paid for
// (the token's verification, the body's strict decode, any Redis read),
// unless it may repeat an order placed for that SKU: such a request must
// get its first answer, and takes the full path.

import (
	"context"
	"time"

	"github.com/flashsale/flashsale"
)

// Quick is what the in-process cache can say about a buy before the
// request is authenticated.
type Quick int

// The quick answers.
const (
	// QuickNone: the cache cannot answer; take the full path.
	QuickNone Quick = iota
	// QuickSoldOut: answer SOLD_OUT now (and count it, CountSoldOutLocal).
	QuickSoldOut
	// QuickMaybeRepeat: the SKU is sold out, but the request may repeat an
	// order placed for it (or the SKU's placed ids are not known here):
	// the full path answers it. Only an authenticated buyer can repeat an
	// order, so unauthenticated it is SOLD_OUT as well.
	QuickMaybeRepeat
)

// maxPlacedSnapshot caps the placed ids kept per SKU; a SKU with more
// sends every request with a key to the full path.
const maxPlacedSnapshot = 1 << 20

// placedReadTimeout bounds the read of a SKU's placed ids.
const placedReadTimeout = 2 * time.Second

// AnySoldOut reports whether this instance may hold any SKU as sold out:
// a lock-free hint, so a door pays for no quick answer while none can be.
func (g *Gate) AnySoldOut() bool { return g.cache.live.Load() > 0 }

// QuickAnswer says whether a buy of one line of sku, with the buyer's
// optional idempotency key, can be answered SOLD_OUT from this instance's
// memory. claimedBuyer is who the request says it is (its token's subject,
// unverified): it only decides whether the request could be a repeat,
// never whom it is answered as. Never while Redis is down (the degraded
// path decides there), and never for a key whose order id (the buyer's,
// flashsale.BuyerOrderID, or the bare key of the earlier scheme) is among
// the SKU's placed ids. It allocates nothing.
func (g *Gate) QuickAnswer(sku, key, claimedBuyer string) Quick {
	if !g.opts.Guard.Up() {
		return QuickNone
	}
	soldOut, placed := g.cache.quick(sku, time.Now())
	switch {
	case !soldOut:
		return QuickNone
	case key == "":
		// A server-made id is new: no repeat.
		return QuickSoldOut
	case placed == nil:
		return QuickMaybeRepeat
	}
	if flashsale.ValidID(claimedBuyer, flashsale.MaxIDLength) {
		var id [flashsale.BuyerOrderIDLength]byte
		if _, ok := placed.ids[string(flashsale.AppendBuyerOrderID(id[:0], claimedBuyer, key))]; ok {
			return QuickMaybeRepeat
		}
	}
	return QuickSoldOut
}

// CountSoldOutLocal counts a buy answered SOLD_OUT from the in-process
// cache by the door (QuickAnswer), as Admit counts its own.
func (g *Gate) CountSoldOutLocal() {
	g.stats.requests.Add(1)
	g.stats.soldOutLocal.Add(1)
}

// soldOutSeen caches sku as sold out for an observation of Redis at
// generation gen (token tok taken before it), and reads the SKU's placed
// ids once per generation, for QuickAnswer.
func (g *Gate) soldOutSeen(ctx context.Context, sku string, tok token, gen int64) {
	if !g.cache.setAt(sku, tok, gen, time.Now()) || g.cache.hasPlaced(sku, gen) {
		return
	}
	// Concurrent observers share one read.
	_, _, _ = g.placedReads.Do(sku, func() (any, error) {
		if g.cache.hasPlaced(sku, gen) {
			return nil, nil
		}
		// Detached: the snapshot is for the next buyers, whoever asked.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), placedReadTimeout)
		defer cancel()
		// Every order that holds a unit of sku was added to the set before
		// its unit was taken, so before the read that saw none left: the
		// set read now holds it. An order admitted later never got a unit
		// of this generation; a unit that comes back is a change, which
		// drops the snapshot (or refuses it, through tok).
		ptok := g.cache.token(time.Now())
		ids, err := g.rdb.SMembers(rctx, placedSetKey(sku)).Result()
		if err != nil {
			g.opts.Logger.Warn("read placed orders of a sold-out sku", "sku_id", sku, "error", err)
			return nil, nil
		}
		if len(ids) > maxPlacedSnapshot {
			return nil, nil
		}
		set := make(map[string]struct{}, len(ids))
		for _, id := range ids {
			set[id] = struct{}{}
		}
		g.cache.setPlaced(sku, ptok, gen, set, time.Now())
		return nil, nil
	})
}
