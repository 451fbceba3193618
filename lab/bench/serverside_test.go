package bench

import (
	"math"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
)

func TestBucketsQuantileSinceAReadBefore(t *testing.T) {
	reg := prometheus.NewRegistry()
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "buy_seconds", Buckets: []float64{0.01, 0.1, 1}}, []string{"outcome"})
	reg.MustRegister(h)
	for range 50 {
		h.WithLabelValues("shed").Observe(0.5) // before: must not count
	}
	before, err := GatherHistograms(reg, "buy_seconds", "outcome")
	require.NoError(t, err)
	for range 90 {
		h.WithLabelValues("shed").Observe(0.005)
	}
	for range 10 {
		h.WithLabelValues("shed").Observe(0.05)
	}
	after, err := GatherHistograms(reg, "buy_seconds", "outcome")
	require.NoError(t, err)
	d := after["shed"].Since(before["shed"])
	require.Equal(t, uint64(100), d.Counts[len(d.Counts)-1])
	// 90 of 100 in (0, 10 ms]: the median is 5.6 ms by interpolation; the
	// 99th is 90% of the way through (10 ms, 100 ms].
	require.InDelta(t, 10*50.0/90, d.QuantileMs(0.5), 1e-9)
	require.InDelta(t, 10+90*0.9, d.QuantileMs(0.99), 1e-9)
	require.Zero(t, Buckets{}.QuantileMs(0.99))
	require.Zero(t, after["admitted"].QuantileMs(0.99), "a label never observed")
	require.False(t, math.IsNaN(after["shed"].QuantileMs(1)))
}
