package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// A sale's share of a histogram is the later reading less the earlier,
// bucket by bucket, and its quantiles interpolate within a bucket.
func TestDiagHistogramSince(t *testing.T) {
	bounds := []float64{0.01, 0.1, 1}
	before := hist{count: 10, sum: 0.05, bounds: bounds, counts: []uint64{10, 10, 10}}
	after := hist{count: 110, sum: 5.05, bounds: bounds, counts: []uint64{10, 60, 110}}
	h := after.since(before)
	require.Equal(t, uint64(100), h.count)
	require.InDelta(t, 5.0, h.sum, 1e-9)
	require.Equal(t, []uint64{0, 50, 100}, h.counts)
	// The 50th of 100 is the last of the (10 ms, 100 ms] bucket.
	require.InDelta(t, 100, h.quantileMs(0.5), 1e-9)
	// The 75th is halfway through (100 ms, 1 s].
	require.InDelta(t, 550, h.quantileMs(0.75), 1e-9)
	require.Zero(t, hist{}.quantileMs(0.99))
}
