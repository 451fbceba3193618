package edge

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/flashsale/flashsale"
)

// clock is a hand-moved clock for the latency cap's learned throughput.
type clock struct{ t time.Time }

func (c *clock) now() time.Time          { return c.t }
func (c *clock) advance(d time.Duration) { c.t = c.t.Add(d) }
func newClock() *clock                   { return &clock{t: time.Unix(1_700_000_000, 0)} }
func isBusy(err error) bool              { return errors.Is(err, &flashsale.Error{Code: flashsale.Busy}) }
func place(t *testing.T, l *PlacementLimit) Permit {
	t.Helper()
	p, err := l.TryPlace()
	if err != nil {
		t.Fatalf("placement %d refused: %v (cap %d)", l.InFlight()+1, err, l.Cap())
	}
	return p
}

// With a configured throughput, what is admitted in flight is throughput x
// target: 100 orders/s within 300 ms is 30 placements, and the 31st is
// answered BUSY with Retry-After, counted as capped.
func TestPlacementCapFromConfiguredThroughput(t *testing.T) {
	l := NewPlacementLimit(PlacementOptions{Throughput: 100, Target: 300 * time.Millisecond})
	if got := l.Cap(); got != 30 {
		t.Fatalf("cap = %d, want 30", got)
	}
	held := make([]Permit, 0, 30)
	for range 30 {
		held = append(held, place(t, l))
	}
	_, err := l.TryPlace()
	var retry *RetryError
	if !isBusy(err) || !errors.As(err, &retry) || retry.After != DefaultBusyRetryAfter {
		t.Fatalf("31st placement: got %v, want BUSY with Retry-After", err)
	}
	if l.Capped() != 1 || l.Rejected() != 1 || l.InFlight() != 30 {
		t.Fatalf("capped %d rejected %d in flight %d, want 1 1 30", l.Capped(), l.Rejected(), l.InFlight())
	}
	held[0].Done(true)
	if l.InFlight() != 29 {
		t.Fatalf("in flight %d after one done, want 29", l.InFlight())
	}
	place(t, l) // the freed place is taken again
	if l.Limit() != 30 {
		t.Fatalf("limit %d, want the cap 30", l.Limit())
	}
}

// Learned, the cap is the completions of the last full second x target.
// An idle instance has no cap (the adaptive limit lets a sale's first
// burst in); placements in flight with none completing bring it to its
// floor; a placement cut short teaches nothing.
func TestPlacementCapLearnsThroughput(t *testing.T) {
	c := newClock()
	l := NewPlacementLimit(PlacementOptions{Target: 300 * time.Millisecond, Now: c.now})
	if got := l.Cap(); got != math.MaxInt {
		t.Fatalf("idle cap = %d, want none", got)
	}

	// 20 completions in each of 10 ticks of 100 ms: 200 a second.
	for range 10 {
		for range 20 {
			place(t, l).Done(true)
		}
		c.advance(rateTick)
	}
	if x := l.Throughput(); x != 200 {
		t.Fatalf("throughput = %v, want 200", x)
	}
	if got := l.Cap(); got != 60 {
		t.Fatalf("cap = %d, want 200/s x 0.3 s = 60", got)
	}

	// Placements cut short (the buyer hung up) are not completions.
	for range 50 {
		place(t, l).Done(false)
	}
	if x := l.Throughput(); x != 200 {
		t.Fatalf("throughput after dropped placements = %v, want still 200", x)
	}

	// A second later nothing completed: idle, no cap.
	c.advance(time.Second + rateTick)
	if got := l.Cap(); got != math.MaxInt {
		t.Fatalf("cap after an idle second = %d, want none", got)
	}
	// One in flight and nothing completes for a second: the server is
	// stuck, the cap is the floor.
	held := place(t, l)
	c.advance(time.Second + rateTick)
	if got := l.Cap(); got != placementMin {
		t.Fatalf("cap with a stuck placement = %d, want the floor %d", got, placementMin)
	}
	for range placementMin - 1 {
		place(t, l)
	}
	if _, err := l.TryPlace(); !isBusy(err) {
		t.Fatalf("placement past the floor: got %v, want BUSY", err)
	}
	held.Done(true)
}

// The cap follows the server up: placements answered in 30 ms against a
// 300 ms target let ten times as many in flight a second later, until the
// adaptive limit's own ceiling.
func TestPlacementCapGrowsWhileAnswersAreFast(t *testing.T) {
	c := newClock()
	l := NewPlacementLimit(PlacementOptions{Target: 300 * time.Millisecond, Max: 64, Now: c.now})
	// A first second at 4 in flight, each answered in 30 ms: about 133/s.
	for range 10 {
		for range 13 {
			place(t, l).Done(true)
		}
		c.advance(rateTick)
	}
	if got := l.Cap(); got != 39 {
		t.Fatalf("cap = %d, want ceil(130/s x 0.3 s) = 39", got)
	}
}

// A negative target turns the cap off: only the adaptive limit decides.
func TestPlacementCapOff(t *testing.T) {
	l := NewPlacementLimit(PlacementOptions{Target: -1, Throughput: 1})
	if got := l.Cap(); got != math.MaxInt {
		t.Fatalf("cap = %d, want none", got)
	}
	for range placementInitial {
		place(t, l)
	}
}

// Check answers as TryPlace would, taking nothing: nil below the cap, BUSY
// with Retry-After (counted as capped) at it, and nil again once a
// placement is done.
func TestPlacementCheckAnswersAsTryPlace(t *testing.T) {
	l := NewPlacementLimit(PlacementOptions{Throughput: 20, Target: 300 * time.Millisecond})
	held := make([]Permit, 0, 6)
	for range 6 {
		if err := l.Check(); err != nil {
			t.Fatalf("check with %d in flight, cap %d: %v", l.InFlight(), l.Cap(), err)
		}
		held = append(held, place(t, l))
	}
	if l.Rejected() != 0 || l.InFlight() != 6 {
		t.Fatalf("rejected %d in flight %d after checks below the cap, want 0 6", l.Rejected(), l.InFlight())
	}
	err := l.Check()
	var retry *RetryError
	if !isBusy(err) || !errors.As(err, &retry) || retry.After != DefaultBusyRetryAfter {
		t.Fatalf("check at the cap: got %v, want BUSY with Retry-After", err)
	}
	if _, err := l.TryPlace(); !isBusy(err) {
		t.Fatalf("TryPlace at the cap: got %v, want BUSY as Check said", err)
	}
	if l.Capped() != 2 || l.Rejected() != 2 || l.InFlight() != 6 {
		t.Fatalf("capped %d rejected %d in flight %d, want 2 2 6", l.Capped(), l.Rejected(), l.InFlight())
	}
	held[0].Done(true)
	if err := l.Check(); err != nil {
		t.Fatalf("check after one done: %v", err)
	}
}

// retryAfter answers one BUSY from l's cap and returns the ceiling its
// Retry-After was drawn under, having checked the draw lies in the
// ceiling's upper half, in whole seconds.
func retryAfter(t *testing.T, l *PlacementLimit) time.Duration {
	t.Helper()
	var retry *RetryError
	if err := l.Check(); !errors.As(err, &retry) {
		t.Fatalf("check at the cap: got %v, want BUSY", err)
	}
	l.retry.Lock()
	ceiling := l.retry.after
	l.retry.Unlock()
	if got := retry.After; got%time.Second != 0 || got < (ceiling/time.Second+1)/2*time.Second || got > ceiling {
		t.Fatalf("Retry-After %s under a ceiling of %s: want whole seconds in its upper half", got, ceiling)
	}
	return ceiling
}

// A saturated instance's BUSY answers do not all say the same: refused
// together, buyers told one figure came back together, as a wave that
// found the few permits taken and left the instance idle until the next.
// Under a 10 s ceiling every second from 5 to 10 is said, and no other.
func TestBusyRetryAfterSpreadsTheCrowd(t *testing.T) {
	c := newClock()
	l := NewPlacementLimit(PlacementOptions{Throughput: 1, Target: 10 * time.Second, Now: c.now})
	for range 10 {
		place(t, l)
	}
	for range 20 {
		for range 100 {
			retryAfter(t, l)
		}
		c.advance(time.Second)
	}
	said := map[time.Duration]int{}
	for range 600 {
		var retry *RetryError
		if err := l.Check(); !errors.As(err, &retry) {
			t.Fatalf("check at the cap: got %v, want BUSY", err)
		}
		said[retry.After]++
	}
	for s := 5; s <= 10; s++ {
		if said[time.Duration(s)*time.Second] == 0 {
			t.Errorf("no BUSY said Retry-After %ds of 600 (said %v)", s, said)
		}
	}
	if len(said) != 6 {
		t.Errorf("Retry-After values said: %v, want only 5s-10s", said)
	}
}

// While an instance answers far more BUSY than it places, the Retry-After
// grows by a second each second, up to its ceiling; once few buyers come
// back it shrinks a second per quiet second, to one. One second as the
// ceiling keeps it fixed. Every BUSY counts, the gate's own too.
func TestBusyRetryAfterFollowsTheRefusals(t *testing.T) {
	for _, tc := range []struct {
		max, want time.Duration
	}{{0, DefaultBusyRetryAfterMax}, {3 * time.Second, 3 * time.Second}, {time.Second, time.Second}} {
		c := newClock()
		// 10 placements a second at most in flight: 1/s x 10 s.
		l := NewPlacementLimit(PlacementOptions{Throughput: 1, Target: 10 * time.Second, MaxRetryAfter: tc.max, Now: c.now})
		for range 10 {
			place(t, l)
		}
		if got := retryAfter(t, l); got != time.Second {
			t.Fatalf("max %s: first Retry-After %s, want 1s", tc.max, got)
		}
		// 100 BUSY answers a second (half of them the gate's), against
		// 5 x max(1/s, nothing completed): 20 seconds of that.
		for range 20 {
			for range 50 {
				retryAfter(t, l)
				l.RetryAfterBusy()
			}
			c.advance(time.Second)
		}
		if got := retryAfter(t, l); got != tc.want {
			t.Fatalf("max %s: Retry-After under a storm %s, want %s", tc.max, got, tc.want)
		}
		// Three quiet seconds, then one BUSY: three seconds shorter.
		c.advance(3 * time.Second)
		if got, want := retryAfter(t, l), max(time.Second, tc.want-3*time.Second); got != want {
			t.Fatalf("max %s: Retry-After after 3 quiet seconds %s, want %s", tc.max, got, want)
		}
		c.advance(time.Minute)
		if got := retryAfter(t, l); got != time.Second {
			t.Fatalf("max %s: Retry-After after a quiet minute %s, want 1s", tc.max, got)
		}
	}
}
