package httpapi

import (
	"context"
	"math"
	"net/http"
	"slices"
	"time"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/internal/buying"
	"github.com/flashsale/flashsale/internal/edge"
	"github.com/flashsale/flashsale/internal/saletraffic"
)

// The sale page's traffic panel: the SKU's buy answers over every API
// instance (internal/saletraffic: counted here, flushed to Redis once a
// second, summed by whichever instance serves the page).

// countSaleTraffic counts a buy answer for the sale page of each SKU that
// decided it: the SKU that refused it, or the items of an admitted one.
// Only SKUs the edge showed are real (recentSKUs) are counted, so a name a
// client made up costs nothing. Called after the answer is written, so
// w's status is known.
func (s *Server) countSaleTraffic(w http.ResponseWriter, items []flashsale.Item, outcome buying.Outcome, err error, took time.Duration) {
	status := statusOf(w)
	shed := outcome == buying.Shed
	if sku, ok := edge.DecidingSKU(err); ok {
		if s.recent.has(sku) {
			s.traffic.Observe(sku, status, shed, took)
		}
		return
	}
	for i, it := range items {
		if s.recent.has(it.SKU) && !slices.ContainsFunc(items[:i], func(o flashsale.Item) bool { return o.SKU == it.SKU }) {
			s.traffic.Observe(it.SKU, status, shed, took)
		}
	}
}

// statusOf is the status the middleware's recorder saw written on w.
func statusOf(w http.ResponseWriter) int {
	if rec, ok := w.(*statusRecorder); ok && rec.status != 0 {
		return rec.status
	}
	return statusClientClosed
}

// trafficNow reads sku's traffic over every instance: totals by answer,
// requests/s over the last saletraffic.RateWindow, p99s over the last
// saletraffic.Window.
func (b *saleBoard) trafficNow(ctx context.Context, sku string, now time.Time) (liveTraffic, error) {
	tr, err := b.s.traffic.Read(ctx, sku, now)
	if err != nil {
		return liveTraffic{Answers: map[string]int64{}}, err
	}
	rate := float64(tr.Recent) / saletraffic.RateWindow.Seconds()
	admitted, shed := cumulative(tr.Bounds, tr.Admitted), cumulative(tr.Bounds, tr.Shed)
	return liveTraffic{
		Answers:           tr.Answers,
		RequestsPerSecond: &rate,
		P99AdmittedMs:     quantileMs(0.99, admitted),
		P99ShedMs:         quantileMs(0.99, shed),
		P99Ms:             quantileMs(0.99, admitted.plus(shed)),
	}, nil
}

// cumulative turns per-bucket counts (the last +Inf) into a histogram's
// cumulative counts.
func cumulative(bounds []float64, counts []uint64) histogramCounts {
	out := histogramCounts{bounds: append(slices.Clone(bounds), math.Inf(1)), counts: make([]uint64, len(counts))}
	var sum uint64
	for i, n := range counts {
		sum += n
		out.counts[i] = sum
	}
	return out
}

// histogramCounts are a histogram's cumulative bucket counts, by upper
// bound (the last one +Inf).
type histogramCounts struct {
	bounds []float64
	counts []uint64
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
