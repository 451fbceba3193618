package edge

import (
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/failsafe-go/failsafe-go/adaptivelimiter"

	"github.com/flashsale/flashsale"
)

// Placement into Temporal. The per-SKU window bounds the units of one SKU
// on their way through Temporal from this instance; PlacementLimit bounds
// every new order placed from this instance, whatever its SKU, by a
// concurrency limit that follows Temporal's answer times (failsafe-go's
// adaptive limiter: the limit shrinks while placements slow down and grows
// back while they keep pace). Past it a buyer is answered BUSY with
// Retry-After at once, instead of joining a queue inside Temporal where
// every admitted buyer behind them waits longer: a flash-sale buyer who
// waits ten seconds clicks again or leaves.
//
// Only new orders take a permit. Payments never do: at most one per order
// (plus the provider's retries of it), they are the sale itself, and one
// refused in the last seconds of its window is a buyer who paid and lost
// the item; they are admitted ahead of every new buy by not queueing
// behind them at all. Repeats of a placed order id do not either: they
// attach to a running workflow and must get their first answer.

// Placement limits; ADMISSION_MAX_IN_FLIGHT overrides the ceiling,
// ADMISSION_TARGET_LATENCY the latency cap's target and ADMISSION_THROUGHPUT
// the throughput it assumes.
const (
	// DefaultPlacementMax is the ceiling of placements in flight from one
	// instance. A dev server on two cores completes ~50 a second at
	// ~20-40 ms each, so a few dozen in flight already saturate it; the
	// limiter finds the point, this only caps how far it may look.
	DefaultPlacementMax = 256
	// DefaultPlacementTarget is the answer time an admitted buyer should
	// not wait past (issue 22: an admitted buyer answered within 300 ms).
	DefaultPlacementTarget = 300 * time.Millisecond
	placementMin           = 4
	placementInitial       = 32
	// DefaultBusyRetryAfterMax is the longest Retry-After a BUSY answer
	// of a saturated instance says (see PlacementLimit.refuse).
	DefaultBusyRetryAfterMax = 10 * time.Second
	// retryHeadroom is how many BUSY answers a second, per placement the
	// instance completes a second, the Retry-After aims at: enough buyers
	// coming back that a freed permit is taken within milliseconds, few
	// enough that answering them does not take the CPU the orders need.
	retryHeadroom = 5
)

// PlacementOptions configure a PlacementLimit. The zero value is the
// production default: ceiling DefaultPlacementMax, target
// DefaultPlacementTarget, throughput learned.
type PlacementOptions struct {
	// Max is the ceiling of placements in flight (DefaultPlacementMax when
	// not positive).
	Max int
	// Target is the answer time the latency cap keeps admitted placements
	// within (DefaultPlacementTarget when zero; negative turns the cap
	// off, which only the benchmark's A/B does).
	Target time.Duration
	// Throughput, when positive, is the placements a second this instance
	// can complete, as measured by an operator; zero learns it from the
	// placements completed in the last second.
	Throughput float64
	// MaxRetryAfter is the longest Retry-After of a BUSY answer
	// (DefaultBusyRetryAfterMax when zero); DefaultBusyRetryAfter (one
	// second) keeps every BUSY answer at one second, as before 2026-12-03.
	MaxRetryAfter time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// PlacementLimit is the limit on new orders placed from this instance:
// the adaptive limit, capped by Little's law. It is safe for concurrent
// use.
//
// The adaptive limit follows Temporal's answer times, but it learns its
// baseline from the sale's first second, when everything is slow, and
// then lets through what a CPU-bound server can only finish seconds later
// (issue 22 measured 59 placements queued in front of one server, an
// admitted buyer waiting 1.2 s at p99). The cap bounds what is in flight
// by what the server completes within the target: with throughput X
// placements a second, X x target in flight are all answered within the
// target, and one more would wait past it. Learned, the cap follows the
// server up as well as down: while placements take less than the target,
// X x target exceeds what is in flight and the cap grows by that ratio
// each second until the server is busy; it settles where the answer time
// is the target.
type PlacementLimit struct {
	limiter    adaptivelimiter.AdaptiveLimiter[any]
	target     time.Duration
	throughput float64 // configured; 0 means learned by rate
	rate       *completions
	now        func() time.Time
	rejected   atomic.Int64
	capped     atomic.Int64

	// busyAnswers counts this instance's BUSY answers (the limit's and
	// the gate's window's), for the Retry-After they carry.
	busyAnswers *completions
	maxAfter    time.Duration
	retry       struct {
		sync.Mutex
		after time.Duration
		sec   int64 // the second after was last moved in
	}
}

// NewPlacementLimit returns the limit o describes.
func NewPlacementLimit(o PlacementOptions) *PlacementLimit {
	maxInFlight := o.Max
	if maxInFlight <= 0 {
		maxInFlight = DefaultPlacementMax
	}
	if o.Target == 0 {
		o.Target = DefaultPlacementTarget
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.MaxRetryAfter < DefaultBusyRetryAfter {
		o.MaxRetryAfter = DefaultBusyRetryAfterMax
	}
	minLimit, initial := min(placementMin, maxInFlight), min(placementInitial, maxInFlight)
	return &PlacementLimit{
		limiter: adaptivelimiter.NewBuilder[any]().
			WithLimits(uint(minLimit), uint(maxInFlight), uint(initial)).
			// Placements take tens of milliseconds: a second of samples
			// (or 50) is enough to see a trend, without waiting for the
			// default 30 s while a sale's first burst queues up.
			WithRecentWindow(time.Second, 10*time.Second, 50).
			Build(),
		target:      o.Target,
		throughput:  o.Throughput,
		rate:        &completions{},
		now:         o.Now,
		busyAnswers: &completions{},
		maxAfter:    o.MaxRetryAfter,
	}
}

// Permit is one placement's hold on the limit; Done gives it back. The
// zero Permit holds nothing.
type Permit struct {
	p adaptivelimiter.Permit
	l *PlacementLimit
}

// Done records how long the placement took, so the limit follows it; a
// placement cut short (the buyer hung up, the call failed) is dropped, so
// its duration says nothing about Temporal. Only a completed placement
// counts toward the learned throughput, for the same reason.
func (p Permit) Done(completed bool) {
	if p.p == nil {
		return
	}
	if completed {
		p.l.rate.add(p.l.now())
		p.p.Record()
		return
	}
	p.p.Drop()
}

// TryPlace takes a permit for a new placement without waiting, or answers
// a RetryError wrapping a Busy error when the limit or the cap is reached.
func (l *PlacementLimit) TryPlace() (Permit, error) {
	p, capped, ok := l.acquire()
	if !ok {
		l.rejected.Add(1)
		if capped {
			l.capped.Add(1)
		}
		return Permit{}, l.busy()
	}
	return p, nil
}

// tryPlaceQuiet takes a permit if the limit and the cap allow one, and
// otherwise takes nothing and counts no refusal: a pass holder's placement
// (Request.Pass), admitted either way.
func (l *PlacementLimit) tryPlaceQuiet() (Permit, bool) {
	p, _, ok := l.acquire()
	return p, ok
}

// acquire takes a permit if the limit and the cap allow one; capped says
// the cap, not the limit, refused it.
func (l *PlacementLimit) acquire() (_ Permit, capped, ok bool) {
	// The cap as this placement finds it (an idle instance has none),
	// before its own permit counts in flight.
	c := l.Cap()
	p, ok := l.limiter.TryAcquirePermit()
	if !ok {
		return Permit{}, false, false
	}
	if l.limiter.Inflight() > c {
		p.Drop()
		return Permit{}, true, false
	}
	return Permit{p: p, l: l}, false, true
}

// Check answers what TryPlace would, without taking a permit: the BUSY
// RetryError while the limit or the cap is reached, nil while a placement
// may still get one (TryPlace decides). Admission asks it before any
// network call. While the server is saturated, most buy requests end here,
// for a few atomic reads, and do not make the Redis round trips of an
// admission that could not use a permit. Those trips once cost more CPU
// than the orders (issue 22: 4 round trips per refused buy, and each window
// release made the reads of the requests beside it stale).
func (l *PlacementLimit) Check() error {
	in := l.limiter.Inflight()
	if in >= l.limiter.Limit() {
		l.rejected.Add(1)
		return l.busy()
	}
	if in >= l.Cap() {
		l.rejected.Add(1)
		l.capped.Add(1)
		return l.busy()
	}
	return nil
}

func (l *PlacementLimit) busy() error {
	return &RetryError{Err: &flashsale.Error{Code: flashsale.Busy}, After: l.refuse()}
}

// refuse counts one BUSY answer of this instance and returns the
// Retry-After it carries.
//
// A fixed second made every refused buyer of a sale come back every
// second: 5,000 buyers, 20 to 60 orders a second, a hundred BUSY answers
// per order, and on a small box those answers took the CPU the orders
// needed (issue 22: ~100 µs of the API's CPU and a Redis round trip or
// two each, 1,850 a second). The buyers who wait are the same whatever
// they are told; what they are told only sets how often they ask. So,
// once a second, the Retry-After grows by a second while the BUSY answers
// of the last second exceed retryHeadroom times the placements completed
// (1.5x, so it does not dither), and shrinks by a second for every second
// they stay under half of that, down to one second: an instance that is
// not saturated, or a crowd that came back too seldom to keep the permits
// taken, is told one second again. Capped at maxAfter.
//
// Each answer is a whole number of seconds drawn evenly from the upper half
// of that ceiling. One figure for everyone turned the crowd into waves: the
// buyers refused together came back together, found the few permits the
// cap allows, and were refused together again, while the instance had
// nothing in flight between waves (2026-12-07: 0 placements in flight in
// ~40% of half-second samples of a sale on an idle box, the box half idle).
// Spread, they come back at an even rate, so a freed permit is taken at
// once, and the BUSY answers a second are what the ceiling was sized for.
func (l *PlacementLimit) refuse() time.Duration {
	return spread(l.retryCeiling())
}

// spread draws a whole number of seconds evenly from [ceil(after/2), after]
// (after a whole number of seconds, at least one).
func spread(after time.Duration) time.Duration {
	hi := int64(after / time.Second)
	lo := (hi + 1) / 2
	return time.Duration(lo+rand.Int64N(hi-lo+1)) * time.Second
}

// retryCeiling counts one BUSY answer and returns the longest Retry-After
// an answer may say now (refuse's rule).
func (l *PlacementLimit) retryCeiling() time.Duration {
	now := l.now()
	l.busyAnswers.add(now)
	sec := now.Unix()
	l.retry.Lock()
	defer l.retry.Unlock()
	if l.retry.after < DefaultBusyRetryAfter {
		l.retry.after = DefaultBusyRetryAfter
	}
	if elapsed := sec - l.retry.sec; elapsed > 0 {
		l.retry.sec = sec
		busy := l.busyAnswers.perSecond(now)
		want := retryHeadroom * max(l.rate.perSecond(now), 1)
		switch {
		case busy > 1.5*want:
			l.retry.after = min(l.retry.after+time.Second, l.maxAfter)
		case busy < want/2:
			l.retry.after = max(l.retry.after-time.Duration(elapsed)*time.Second, DefaultBusyRetryAfter)
		}
	}
	return l.retry.after
}

// RetryAfterBusy counts a BUSY answer the gate gives on its own (a SKU's
// window full) and returns its Retry-After, the same as the limit's.
func (l *PlacementLimit) RetryAfterBusy() time.Duration { return l.refuse() }

// Cap is the latency cap on placements in flight: throughput x target,
// at least the adaptive limit's floor. There is none while the cap is off
// (a negative target) or the instance is idle (nothing completed in the
// last second and nothing in flight: no throughput to learn from, and the
// adaptive limit alone lets a sale's first burst in). Nothing completed
// while placements are in flight is a throughput of zero, learned: the cap
// falls to its floor.
func (l *PlacementLimit) Cap() int {
	if l.target < 0 {
		return math.MaxInt
	}
	x := l.throughput
	if x <= 0 {
		if x = l.rate.perSecond(l.now()); x == 0 && l.limiter.Inflight() == 0 {
			return math.MaxInt
		}
	}
	return max(placementMin, int(math.Ceil(x*l.target.Seconds())))
}

// Throughput is the placements a second the cap assumes: the configured
// figure, or the one learned over the last second (0 before any).
func (l *PlacementLimit) Throughput() float64 {
	if l.throughput > 0 {
		return l.throughput
	}
	return l.rate.perSecond(l.now())
}

// Limit is the current limit on placements in flight: the adaptive limit
// or the cap, whichever is lower.
func (l *PlacementLimit) Limit() int { return min(l.limiter.Limit(), l.Cap()) }

// InFlight counts the placements holding a permit.
func (l *PlacementLimit) InFlight() int { return l.limiter.Inflight() }

// Rejected counts the placements refused since start, by either limit.
func (l *PlacementLimit) Rejected() int64 { return l.rejected.Load() }

// Capped counts the placements refused by the latency cap since start.
func (l *PlacementLimit) Capped() int64 { return l.capped.Load() }

// completions counts completed placements in a ring of slots covering the
// last second, to learn the throughput from. A mutex is enough: it is
// taken once per placement, which itself costs a Temporal round trip.
type completions struct {
	mu sync.Mutex
	// slot[i] counts completions in the tick ticks[i]; a slot whose tick
	// is older than a window is stale and counts nothing.
	slot  [rateWindow + 1]int64
	ticks [rateWindow + 1]int64
}

// The window is rateWindow ticks; the ring holds one more, the tick still
// filling.
const (
	rateWindow = 10
	rateTick   = 100 * time.Millisecond
)

func (c *completions) add(now time.Time) {
	t := now.UnixNano() / int64(rateTick)
	i := t % (rateWindow + 1)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ticks[i] != t {
		c.ticks[i], c.slot[i] = t, 0
	}
	c.slot[i]++
}

// perSecond is the completions of the last full second (the ticks before
// the current one, which is still filling).
func (c *completions) perSecond(now time.Time) float64 {
	t := now.UnixNano() / int64(rateTick)
	c.mu.Lock()
	defer c.mu.Unlock()
	var n int64
	for i := range c.ticks {
		if age := t - c.ticks[i]; age >= 1 && age <= rateWindow {
			n += c.slot[i]
		}
	}
	return float64(n) / (rateWindow * rateTick).Seconds()
}
