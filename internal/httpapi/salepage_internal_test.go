package httpapi

import (
	"math"
	"testing"
	"time"

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

func TestTrafficHistory(t *testing.T) {
	var h trafficHistory
	t0 := time.Unix(1000, 0)
	for i := range 20 {
		h.add(trafficSample{at: t0.Add(time.Duration(i) * time.Second), requests: int64(10 * i)})
	}
	// Kept: the last 10 s and one sample before them.
	require.Equal(t, t0.Add(8*time.Second), h.samples[0].at)
	now := t0.Add(19 * time.Second)
	s, ok := h.since(now.Add(-trafficRateWindow))
	require.True(t, ok)
	require.Equal(t, now.Add(-trafficRateWindow), s.at)
	// The newest sample is never its own start.
	var one trafficHistory
	one.add(trafficSample{at: now})
	_, ok = one.since(now.Add(-time.Second))
	require.False(t, ok)
}
