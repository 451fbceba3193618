package edge

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/flashsale/flashsale"
)

// Ticket is an admitted request. Done must be called once the order's
// placement has answered, to give its in-flight units back.
type Ticket struct {
	g     *Gate
	items []flashsale.Item
	// window holds the ticket's units: the gate's window, or its degraded
	// one (Degraded).
	window *inflight
	// Degraded is true when Redis was down: the request was admitted on
	// MySQL's available units.
	Degraded bool
	// Duplicate is true when the order id had been placed before: the
	// request goes to Temporal for its first answer and starts nothing.
	Duplicate bool
	// Deduct is when the SKU of a one-line order takes its unit, as the
	// admission's stock read found it in Redis (inventory.Availability's
	// Deduct); empty when no read said (several lines, a duplicate, Redis
	// down). The order's workflow carries it to ReserveStock, which then
	// skips the booking call of a SKU that takes none.
	Deduct flashsale.Deduct
	done   atomic.Bool
	// permit is the ticket's hold on the placement limit (none for a
	// duplicate); placed is set once it is given back.
	permit Permit
	placed atomic.Bool
}

// hold takes a placement permit for the ticket, or answers the limit's
// BUSY RetryError.
func (t *Ticket) hold() error {
	if t.g.opts.Placements == nil {
		return nil
	}
	p, err := t.g.opts.Placements.TryPlace()
	if err != nil {
		return err
	}
	t.permit = p
	return nil
}

// holdIfFree takes a placement permit for the ticket if the limit has one
// free, and reports whether it did; a refusal is not counted as a BUSY
// answer (nobody is told BUSY).
func (t *Ticket) holdIfFree() bool {
	if t.g.opts.Placements == nil {
		return true
	}
	p, ok := t.g.opts.Placements.tryPlaceQuiet()
	if ok {
		t.permit = p
	}
	return ok
}

// Placed gives the ticket's placement permit back once the order's
// placement has answered: completed (Temporal answered) feeds the limit's
// view of Temporal's answer times and throughput, a placement cut short
// does not. Done gives it back as cut short if Placed was not called.
// Calling it more than once is harmless.
func (t *Ticket) Placed(completed bool) {
	if t == nil || !t.placed.CompareAndSwap(false, true) {
		return
	}
	t.permit.Done(completed)
}

// doneTimeout bounds Done's re-read of SKUs answered sold out.
const doneTimeout = 2 * time.Second

// Done gives the ticket's in-flight units back. soldOut reports that the
// order was rejected as sold out: the gate then reads each SKU and, if it is
// really empty, caches that, so the next buyers stop at the first layer.
// That read is detached from ctx's cancellation (the buyer may have gone;
// the answer is for the next ones) and bounded by doneTimeout. Calling Done
// more than once is harmless.
func (t *Ticket) Done(ctx context.Context, soldOut bool) {
	if t == nil || !t.done.CompareAndSwap(false, true) {
		return
	}
	t.Placed(false)
	t.release()
	if !soldOut {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), doneTimeout)
	defer cancel()
	if t.Degraded {
		for _, it := range t.items {
			tok := t.g.cache.token(time.Now())
			units, err := t.g.dbAvailable(ctx, it.SKU)
			if err == nil && units == 0 {
				t.g.cache.set(it.SKU, tok, time.Now())
			}
		}
		return
	}
	for _, it := range t.items {
		tok := t.g.cache.token(time.Now())
		av, err := t.g.stock.Available(ctx, it.SKU)
		if err != nil {
			t.g.opts.Logger.Warn("read stock after sold-out answer", "sku_id", it.SKU, "error", err)
			continue
		}
		switch {
		case av.SoldOut:
			t.g.soldOutSeen(ctx, it.SKU, tok, av.Gen)
		case av.Units == 0:
			t.g.observedEmpty(ctx, it.SKU, tok, av.Gen)
		}
	}
}

// take asks the ticket's window for every item through admitOne, all or
// nothing: on the first refusal it gives back what it took and returns the
// answer for the buyer. A one-line order keeps its SKU's deduct mode.
func (t *Ticket) take(ctx context.Context, items []flashsale.Item, admitOne func(context.Context, flashsale.Item) (itemAdmission, error)) error {
	for _, it := range items {
		a, err := admitOne(ctx, it)
		if err != nil {
			t.release()
			return err
		}
		switch a.res {
		case admitted:
			t.items = append(t.items, it)
			if len(items) == 1 {
				// Only a one-line order may be booked
				// (activities.ReserveStock).
				t.Deduct = a.deduct
			}
		case tooFew:
			t.release()
			t.g.stats.soldOutStock.Add(1)
			return decidedBy(it.SKU, fmt.Errorf("sku %s: %d wanted, fewer left: %w", it.SKU, it.Quantity, flashsale.Errorf(flashsale.SoldOut, "sold out")))
		default:
			t.release()
			return decidedBy(it.SKU, t.g.busy())
		}
	}
	return nil
}

func (t *Ticket) release() {
	for _, it := range t.items {
		t.window.release(it.SKU, it.Quantity)
	}
}
