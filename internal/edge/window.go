package edge

import "sync"

// inflight counts, per SKU, the units of admitted requests whose placement
// has not answered yet. Entries are deleted at zero, so unknown or idle SKUs
// cost nothing. Both maps are written only for admitted items, which passed
// a stock read, so their keys are real SKUs, never a client's made-up names
// (full and releases only read).
type inflight struct {
	mu    sync.Mutex
	units map[string]int64
	sum   int64
	// released counts give-backs per SKU (one entry per SKU ever sold here,
	// so it stays small).
	released map[string]uint64
}

func newInflight() *inflight {
	return &inflight{units: map[string]int64{}, released: map[string]uint64{}}
}

// admission is the window's decision for one request.
type admission int

const (
	admitted admission = iota
	busy               // units remain, but the admitted ones in flight may take them
	tooFew             // nothing in flight and still not enough units
	stale              // an admitted request finished since the read: read again
)

// releases returns how many times admitted units of sku have been given
// back. admit compares it with the value taken before the Redis read.
func (f *inflight) releases(sku string) uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.released[sku]
}

// admit takes qty units of the window for sku if the units already admitted
// plus qty fit into both units (what Redis held when read) and limit. A
// request alone may exceed limit: an order larger than the window must
// still be servable.
//
// seen is releases(sku) taken before units was read. If an admitted request
// finished in between, its unit may have left Redis after the read while it
// no longer counts in flight, so the read is stale and must not admit.
func (f *inflight) admit(sku string, qty, units, limit int64, seen uint64) admission {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.released[sku] != seen {
		return stale
	}
	cur := f.units[sku]
	switch {
	case cur == 0 && qty > units:
		return tooFew
	case cur+qty > units, cur > 0 && cur+qty > limit:
		return busy
	}
	f.units[sku] = cur + qty
	f.sum += qty
	return admitted
}

// full reports whether the window is at its limit; it reserves nothing.
func (f *inflight) full(sku string, qty, limit int64) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	cur := f.units[sku]
	return cur > 0 && cur+qty > limit
}

// known reports whether units of sku were ever admitted here: a real SKU,
// on sale.
func (f *inflight) known(sku string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, in := f.units[sku]
	_, out := f.released[sku]
	return in || out
}

func (f *inflight) release(sku string, qty int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.released[sku]++
	cur := f.units[sku] - qty
	if cur <= 0 {
		delete(f.units, sku)
	} else {
		f.units[sku] = cur
	}
	f.sum -= qty
}

func (f *inflight) total() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.sum
}
