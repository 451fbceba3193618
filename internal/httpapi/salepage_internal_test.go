package httpapi

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestQuantileMs(t *testing.T) {
	h := func(counts ...uint64) histogramCounts {
		return histogramCounts{bounds: []float64{0.01, 0.1, 1, math.Inf(1)}, counts: counts}
	}
	require.Nil(t, quantileMs(0.99, histogramCounts{}))
	require.Nil(t, quantileMs(0.99, h(0, 0, 0, 0)))
	// 100 answers, all under 10 ms: p99 interpolates inside the first bucket.
	require.InDelta(t, 9.9, *quantileMs(0.99, h(100, 100, 100, 100)), 0.001)
	// 90 under 10 ms, 10 between 100 ms and 1 s: p99 is in the third bucket.
	require.InDelta(t, 910, *quantileMs(0.99, h(90, 90, 100, 100)), 0.001)
	// Beyond the last finite bound: that bound, as histogram_quantile says.
	require.InDelta(t, 1000, *quantileMs(0.99, h(0, 0, 0, 10)), 0.001)
	// The window's observations are the difference of two samples.
	d := h(95, 98, 100, 100).minus(h(90, 90, 90, 90))
	require.Equal(t, []uint64{5, 8, 10, 10}, d.counts)
	require.Equal(t, []uint64{10, 16, 20, 20}, d.plus(d).counts)
}

func TestCumulative(t *testing.T) {
	// Per-bucket counts from Redis become the cumulative counts
	// quantileMs reads, +Inf last.
	h := cumulative([]float64{0.01, 0.1, 1}, []uint64{90, 0, 10, 0})
	require.Equal(t, []uint64{90, 90, 100, 100}, h.counts)
	require.True(t, math.IsInf(h.bounds[3], 1))
	require.InDelta(t, 910, *quantileMs(0.99, h), 0.001)
}
