package edge

import (
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

// Placement limits; ADMISSION_MAX_IN_FLIGHT overrides the ceiling.
const (
	// DefaultPlacementMax is the ceiling of placements in flight from one
	// instance. A dev server on two cores completes ~50 a second at
	// ~20-40 ms each, so a few dozen in flight already saturate it; the
	// limiter finds the point, this only caps how far it may look.
	DefaultPlacementMax = 256
	placementMin        = 4
	placementInitial    = 32
)

// PlacementLimit is the adaptive limit on new orders placed from this
// instance. It is safe for concurrent use.
type PlacementLimit struct {
	limiter  adaptivelimiter.AdaptiveLimiter[any]
	rejected atomic.Int64
}

// NewPlacementLimit returns a limit of at most maxInFlight placements
// (DefaultPlacementMax when not positive).
func NewPlacementLimit(maxInFlight int) *PlacementLimit {
	if maxInFlight <= 0 {
		maxInFlight = DefaultPlacementMax
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
	}
}

// Permit is one placement's hold on the limit; Done gives it back. The
// zero Permit holds nothing.
type Permit struct{ p adaptivelimiter.Permit }

// Done records how long the placement took, so the limit follows it; a
// placement cut short (the buyer hung up, the call failed) is dropped, so
// its duration says nothing about Temporal.
func (p Permit) Done(completed bool) {
	if p.p == nil {
		return
	}
	if completed {
		p.p.Record()
		return
	}
	p.p.Drop()
}

// TryPlace takes a permit for a new placement without waiting, or answers
// a RetryError wrapping a Busy error when the limit is reached.
func (l *PlacementLimit) TryPlace() (Permit, error) {
	p, ok := l.limiter.TryAcquirePermit()
	if !ok {
		l.rejected.Add(1)
		return Permit{}, &RetryError{Err: &flashsale.Error{Code: flashsale.Busy}, After: DefaultBusyRetryAfter}
	}
	return Permit{p: p}, nil
}

// Limit is the current limit on placements in flight.
func (l *PlacementLimit) Limit() int { return l.limiter.Limit() }

// InFlight counts the placements holding a permit.
func (l *PlacementLimit) InFlight() int { return l.limiter.Inflight() }

// Rejected counts the placements refused since start.
func (l *PlacementLimit) Rejected() int64 { return l.rejected.Load() }
