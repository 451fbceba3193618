package httpapi

import (
	"time"

	"github.com/failsafe-go/failsafe-go/adaptivelimiter"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/internal/edge"
	fsmetrics "github.com/flashsale/flashsale/internal/metrics"
)

// Admission into Temporal. The edge's per-SKU window bounds the units of
// one SKU on their way through Temporal from this instance; this bounds
// every new order placed from this instance, whatever its SKU, by a
// concurrency limit that follows Temporal's answer times (failsafe-go's
// adaptive limiter: the limit shrinks while placements slow down and grows
// back while they keep pace). Past it a buyer is answered 429 BUSY with
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

// Admission limits; ADMISSION_MAX_IN_FLIGHT overrides the ceiling.
const (
	// DefaultAdmissionMax is the ceiling of placements in flight from one
	// instance. A dev server on two cores completes ~50 a second at
	// ~20-40 ms each, so a few dozen in flight already saturate it; the
	// limiter finds the point, this only caps how far it may look.
	DefaultAdmissionMax = 256
	admissionMin        = 4
	admissionInitial    = 32
)

// admission is the adaptive limit on placements from this instance.
type admission struct {
	limiter  adaptivelimiter.AdaptiveLimiter[any]
	rejected prometheus.Counter
}

func newAdmission(maxInFlight int) *admission {
	if maxInFlight <= 0 {
		maxInFlight = DefaultAdmissionMax
	}
	minLimit, initial := min(admissionMin, maxInFlight), min(admissionInitial, maxInFlight)
	return &admission{
		limiter: adaptivelimiter.NewBuilder[any]().
			WithLimits(uint(minLimit), uint(maxInFlight), uint(initial)).
			// Placements take tens of milliseconds: a second of samples
			// (or 50) is enough to see a trend, without waiting for the
			// default 30 s while a sale's first burst queues up.
			WithRecentWindow(time.Second, 10*time.Second, 50).
			Build(),
		rejected: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: fsmetrics.Namespace, Name: "admission_rejected_total",
			Help: "New orders answered 429 BUSY because this instance's adaptive limit on placements in flight was reached.",
		}),
	}
}

// permit is one placement's hold on the limit; done gives it back.
type permit struct{ p adaptivelimiter.Permit }

// done records how long the placement took, so the limit follows it; a
// placement cut short (the buyer hung up, the call failed) is dropped, so
// its duration says nothing about Temporal.
func (p permit) done(completed bool) {
	if completed {
		p.p.Record()
		return
	}
	p.p.Drop()
}

// tryPlace takes a permit for a new placement without waiting, or answers
// the edge's BUSY error when the limit is reached.
func (a *admission) tryPlace() (permit, error) {
	p, ok := a.limiter.TryAcquirePermit()
	if !ok {
		a.rejected.Inc()
		return permit{}, &edge.RetryError{Err: &flashsale.Error{Code: flashsale.Busy}, After: edge.DefaultBusyRetryAfter}
	}
	return permit{p: p}, nil
}

// collectors are the admission's metrics: the limit and what holds it
// read at scrape time, and the rejections.
func (a *admission) collectors() []prometheus.Collector {
	return []prometheus.Collector{
		a.rejected,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: fsmetrics.Namespace, Name: "admission_limit",
			Help: "This instance's current adaptive limit on new orders in flight into Temporal.",
		}, func() float64 { return float64(a.limiter.Limit()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: fsmetrics.Namespace, Name: "admission_in_flight",
			Help: "New orders from this instance waiting for Temporal's answer.",
		}, func() float64 { return float64(a.limiter.Inflight()) }),
	}
}
