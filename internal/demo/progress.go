package demo

import (
	"fmt"
	"io"
	"sync"
	"time"
)

// progress tells a person how a sale goes: one line at most every
// progressEvery, and a last one at the end. Lines, not a redrawn bar, so
// the demo's output reads the same in a terminal, a log file or CI.
type progress struct {
	w     io.Writer
	units int64

	mu       sync.Mutex
	last     time.Time
	reserved int64
	paid     int64
}

const progressEvery = time.Second

// newProgress returns nil when w is nil: every method is a no-op then.
func newProgress(w io.Writer, units int64) *progress {
	if w == nil {
		return nil
	}
	return &progress{w: w, units: units}
}

// set records the figures so far (reserved < 0 leaves it out) and prints
// them if the last line is older than progressEvery.
func (p *progress) set(reserved, paid int64) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.reserved, p.paid = reserved, paid
	if time.Since(p.last) >= progressEvery {
		p.print()
	}
}

// finish prints the last figures.
func (p *progress) finish() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.print()
}

func (p *progress) print() {
	p.last = time.Now()
	if p.reserved >= 0 {
		fmt.Fprintf(p.w, "  reserved %d, paid %d of %d\n", p.reserved, p.paid, p.units)
		return
	}
	fmt.Fprintf(p.w, "  paid %d of %d\n", p.paid, p.units)
}
