package sale

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// Waits holds buyers' looks at their place while nothing changed for them:
// the long poll of GET /api/v1/skus/{sku}/queue/me?wait=N. A buyer waiting
// for their pass used to learn that their turn came, or that the SKU sold
// out, only at their next poll: up to a poll interval late, and the
// crowd's polls were most of the API's work while it waited.
//
// One watcher per SKU and API instance looks at the serving counter every
// Every while anyone waits (Store.Serve, which moves the counter on like
// any look, so passes go out even while every buyer is held), whatever the
// number of waiters: a sale with 10,000 buyers held costs the instance ten
// looks a second, not 10,000. It wakes the waiters whose rank the counter
// reached, and all of them once the SKU sold out or the sale left OPEN; a
// waiter whose time is up is answered the counter it read last, so a held
// look costs its buyer one look, before the wait, unless it was served.
type Waits struct {
	store *Store
	every time.Duration
	log   *slog.Logger

	mu      sync.Mutex
	skus    map[string]map[*waiter]struct{}
	closed  bool
	closing chan struct{}
}

// DefaultWaitEvery is how often a SKU's watcher looks at the counter:
// the most a waiter's wake trails the change it waits for, and one look
// per SKU per instance in that time.
const DefaultWaitEvery = 100 * time.Millisecond

// waiter is one held look: its rank, where its wake goes, and the counter
// the watcher read last without waking it (zero while none, or when the
// last look failed), under Waits.mu.
type waiter struct {
	rank int64
	wake chan Counter // buffered: the watcher never blocks on a waiter
	last Counter
}

// NewWaits returns the waits of one API instance on store, whose watchers
// look every every (DefaultWaitEvery when not positive).
func NewWaits(store *Store, every time.Duration, log *slog.Logger) *Waits {
	if every <= 0 {
		every = DefaultWaitEvery
	}
	return &Waits{store: store, every: every, log: log, skus: map[string]map[*waiter]struct{}{},
		closing: make(chan struct{})}
}

// Waiting reports whether p is a place worth holding: an open sale, the
// buyer ranked and not yet served, no pass held or spent, units left.
func Waiting(p Place) bool {
	return p.State == Open && p.Rank > p.Serving && p.PassExpiry.IsZero() && !p.Spent && !p.SoldOut
}

// Wait holds a buyer of rank in sku's queue until the counter reaches the
// rank, the SKU sells out or the sale leaves OPEN (woken, with the counter
// that woke it), or until d passes, ctx ends or the waits close (not
// woken). Not woken, it answers the counter the watcher read last, which
// did not serve rank (Place.At tells the buyer's place from it), or the
// zero Counter when there is none to trust (no look yet, or the last one
// failed): the caller then looks again as any poll would.
func (w *Waits) Wait(ctx context.Context, sku string, rank int64, d time.Duration) (Counter, bool) {
	me := &waiter{rank: rank, wake: make(chan Counter, 1)}
	if !w.add(sku, me) {
		return Counter{}, false
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case c := <-me.wake:
		w.remove(sku, me)
		return c, true
	case <-t.C:
	case <-ctx.Done():
	case <-w.closing:
	}
	// Removed, the waiter gets no more wakes; one sent meanwhile wins over
	// the last counter, which predates it.
	last := w.remove(sku, me)
	select {
	case c := <-me.wake:
		return c, true
	default:
		return last, false
	}
}

// Close wakes every waiter (they look again and answer) and holds no new
// one: the instance is shutting down and must not keep requests open.
func (w *Waits) Close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.closed {
		w.closed = true
		close(w.closing)
	}
}

// add registers me, starting sku's watcher if it is the first waiter;
// false once the waits are closed.
func (w *Waits) add(sku string, me *waiter) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return false
	}
	ws, ok := w.skus[sku]
	if !ok {
		ws = map[*waiter]struct{}{}
		w.skus[sku] = ws
		go w.watch(sku)
	}
	ws[me] = struct{}{}
	return true
}

// remove unregisters me and answers the counter the watcher read last for
// it.
func (w *Waits) remove(sku string, me *waiter) Counter {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.skus[sku], me)
	return me.last
}

// watch looks at sku's counter every w.every and wakes the waiters it
// concerns, until none is left (checked under the lock that add takes, so
// a waiter added as the watcher stops gets a watcher of its own).
func (w *Waits) watch(sku string) {
	t := time.NewTicker(w.every)
	defer t.Stop()
	failing := false
	for range t.C {
		ctx, cancel := context.WithTimeout(context.Background(), w.every*10)
		c, err := w.store.Serve(ctx, sku)
		cancel()
		// The waiters' own timeouts still answer them while the looks
		// fail, and the next tick tries again: said once, not ten times
		// a second.
		switch {
		case err != nil && !failing:
			w.log.Warn("queue wait: the serving counter does not answer; waiters are answered at their wait's end", "sku", sku, "err", err)
		case err == nil && failing:
			w.log.Info("queue wait: the serving counter answers again", "sku", sku)
		}
		failing = err != nil
		w.mu.Lock()
		ws := w.skus[sku]
		for me := range ws {
			switch {
			case err != nil:
				me.last = Counter{}
			case c.State != Open || c.SoldOut || me.rank <= c.Serving:
				me.wake <- c
				delete(ws, me)
			default:
				me.last = c
			}
		}
		if len(ws) == 0 {
			delete(w.skus, sku)
			w.mu.Unlock()
			return
		}
		w.mu.Unlock()
	}
}
