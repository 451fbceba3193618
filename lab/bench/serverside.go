package bench

import (
	"math"

	"github.com/prometheus/client_golang/prometheus"
)

// Buckets is one histogram of a Prometheus gatherer at one moment: upper
// bounds (seconds) and the cumulative count at each, +Inf last.
type Buckets struct {
	Bounds []float64
	Counts []uint64
}

// GatherHistograms reads the histogram family name from g, by the value of
// its label (one histogram per value).
func GatherHistograms(g prometheus.Gatherer, name, label string) (map[string]Buckets, error) {
	mfs, err := g.Gather()
	if err != nil {
		return nil, err
	}
	out := map[string]Buckets{}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			var key string
			for _, l := range m.GetLabel() {
				if l.GetName() == label {
					key = l.GetValue()
				}
			}
			h := m.GetHistogram()
			var b Buckets
			for _, bk := range h.GetBucket() {
				b.Bounds = append(b.Bounds, bk.GetUpperBound())
				b.Counts = append(b.Counts, bk.GetCumulativeCount())
			}
			b.Bounds = append(b.Bounds, math.Inf(1))
			b.Counts = append(b.Counts, h.GetSampleCount())
			out[key] = b
		}
	}
	return out, nil
}

// Since is what was observed between before and b (the same histogram,
// read twice).
func (b Buckets) Since(before Buckets) Buckets {
	out := Buckets{Bounds: b.Bounds, Counts: make([]uint64, len(b.Counts))}
	for i := range b.Counts {
		out.Counts[i] = b.Counts[i]
		if i < len(before.Counts) {
			out.Counts[i] -= before.Counts[i]
		}
	}
	return out
}

// QuantileMs is the q-quantile in milliseconds, interpolated linearly
// within its bucket as Prometheus's histogram_quantile does; 0 when
// nothing was observed. A quantile in the +Inf bucket answers the last
// finite bound.
func (b Buckets) QuantileMs(q float64) float64 {
	n := len(b.Counts)
	if n == 0 || b.Counts[n-1] == 0 {
		return 0
	}
	rank := q * float64(b.Counts[n-1])
	lower, below := 0.0, uint64(0)
	for i, c := range b.Counts {
		if float64(c) >= rank {
			if math.IsInf(b.Bounds[i], 1) {
				return 1000 * lower
			}
			in := float64(c - below)
			return 1000 * (lower + (b.Bounds[i]-lower)*(rank-float64(below))/in)
		}
		lower, below = b.Bounds[i], c
	}
	return 1000 * lower
}
