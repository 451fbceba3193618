package httpapi

import (
	"math"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/flashsale/flashsale/internal/buying"
)

// The sale page's traffic panel: this instance's buy rate and p99s over
// the last seconds, from the API's own Prometheus instruments.

// trafficNow samples this instance's buy counters and turns the samples of
// the last few seconds into a rate and p99s.
func (b *saleBoard) trafficNow(now time.Time) liveTraffic {
	cur := b.sampleTraffic(now)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.traffic.add(cur)
	out := liveTraffic{Answers: cur.answers, Edge: map[string]int64{}}
	if old, ok := b.traffic.since(now.Add(-trafficRateWindow)); ok && cur.at.Sub(old.at) > 0 {
		rate := float64(cur.requests-old.requests) / cur.at.Sub(old.at).Seconds()
		out.RequestsPerSecond = &rate
	}
	if old, ok := b.traffic.since(now.Add(-trafficP99Window)); ok {
		out.P99AdmittedMs = quantileMs(0.99, cur.admitted.minus(old.admitted))
		out.P99ShedMs = quantileMs(0.99, cur.shed.minus(old.shed))
		out.P99Ms = quantileMs(0.99, cur.admitted.minus(old.admitted).plus(cur.shed.minus(old.shed)))
	}
	st := b.s.gate.Stats()
	for k, v := range map[string]int64{
		"admitted": st.Admitted, "duplicate": st.Duplicates, "sold_out_local": st.SoldOutLocal,
		"sold_out_redis_flag": st.SoldOutRedis, "sold_out_stock": st.SoldOutStock, "busy": st.Busy,
		"rate_limited": st.RateLimited, "unavailable": st.Unavailable,
	} {
		out.Edge[k] = v
	}
	return out
}

// trafficSample is the instance's cumulative buy counters at one time.
type trafficSample struct {
	at       time.Time
	requests int64
	answers  map[string]int64
	admitted histogramCounts
	shed     histogramCounts
}

// sampleTraffic reads the API's own Prometheus instruments, so the page
// and the dashboard count the same things.
func (b *saleBoard) sampleTraffic(now time.Time) trafficSample {
	out := trafficSample{at: now, answers: map[string]int64{}}
	for _, m := range collect(b.s.prom.requests) {
		if label(m, "route") != buyRoute {
			continue
		}
		n := int64(m.GetCounter().GetValue())
		out.answers[label(m, "code")] += n
		out.requests += n
	}
	for _, m := range collect(b.s.prom.buy) {
		h := histogramOf(m.GetHistogram())
		switch label(m, "outcome") {
		case string(buying.Admitted):
			out.admitted = h
		case string(buying.Shed):
			out.shed = h
		}
	}
	return out
}

func collect(c prometheus.Collector) []*dto.Metric {
	ch := make(chan prometheus.Metric, 64)
	go func() {
		c.Collect(ch)
		close(ch)
	}()
	var out []*dto.Metric
	for m := range ch {
		var d dto.Metric
		if err := m.Write(&d); err == nil {
			out = append(out, &d)
		}
	}
	return out
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// histogramCounts are a histogram's cumulative bucket counts, by upper
// bound (the last one +Inf).
type histogramCounts struct {
	bounds []float64
	counts []uint64
}

func histogramOf(h *dto.Histogram) histogramCounts {
	var out histogramCounts
	for _, b := range h.GetBucket() {
		out.bounds = append(out.bounds, b.GetUpperBound())
		out.counts = append(out.counts, b.GetCumulativeCount())
	}
	out.bounds = append(out.bounds, math.Inf(1))
	out.counts = append(out.counts, h.GetSampleCount())
	return out
}

// minus is the observations between old and h (same bounds; an empty old
// means "since start").
func (h histogramCounts) minus(old histogramCounts) histogramCounts {
	out := histogramCounts{bounds: h.bounds, counts: slices.Clone(h.counts)}
	if len(old.counts) == len(h.counts) {
		for i := range out.counts {
			out.counts[i] -= old.counts[i]
		}
	}
	return out
}

func (h histogramCounts) plus(o histogramCounts) histogramCounts {
	switch {
	case len(h.counts) == 0:
		return o
	case len(o.counts) != len(h.counts):
		return h
	}
	out := histogramCounts{bounds: h.bounds, counts: slices.Clone(h.counts)}
	for i := range out.counts {
		out.counts[i] += o.counts[i]
	}
	return out
}

// quantileMs estimates the q-quantile in milliseconds as Prometheus's
// histogram_quantile does: linear within the bucket holding the rank, the
// highest finite bound when the rank falls in +Inf. Nil without data.
func quantileMs(q float64, h histogramCounts) *float64 {
	n := len(h.counts)
	if n == 0 || h.counts[n-1] == 0 {
		return nil
	}
	rank := q * float64(h.counts[n-1])
	for i, c := range h.counts {
		if float64(c) < rank {
			continue
		}
		if math.IsInf(h.bounds[i], 1) {
			v := 1000 * h.bounds[max(i-1, 0)]
			return &v
		}
		lower, below := 0.0, uint64(0)
		if i > 0 {
			lower, below = h.bounds[i-1], h.counts[i-1]
		}
		v := lower
		if in := c - below; in > 0 {
			v += (h.bounds[i] - lower) * (rank - float64(below)) / float64(in)
		}
		v *= 1000
		return &v
	}
	return nil
}

// trafficHistory keeps the samples of the last trafficP99Window.
type trafficHistory struct{ samples []trafficSample }

func (t *trafficHistory) add(s trafficSample) {
	t.samples = append(t.samples, s)
	// Keep one sample older than the window, so it always has a start.
	cut := 0
	for i, old := range t.samples {
		if s.at.Sub(old.at) > trafficP99Window {
			cut = i
		}
	}
	t.samples = t.samples[cut:]
}

// since returns the oldest sample taken at or after from, other than the
// newest one.
func (t *trafficHistory) since(from time.Time) (trafficSample, bool) {
	for _, s := range t.samples[:max(len(t.samples)-1, 0)] {
		if !s.at.Before(from) {
			return s, true
		}
	}
	return trafficSample{}, false
}
