package bench

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestLatencyHistogram(t *testing.T) {
	tests := []struct {
		name string
		lat  []time.Duration
		want []Bucket
	}{
		{"empty", nil, []Bucket{}},
		{"one bucket", []time.Duration{3 * time.Millisecond, 4 * time.Millisecond}, []Bucket{{UpToMs: 5, Count: 2}}},
		{
			"spread with a gap",
			[]time.Duration{500 * time.Microsecond, 15 * time.Millisecond, 3 * time.Second},
			[]Bucket{{1, 1}, {2, 0}, {5, 0}, {10, 0}, {20, 1}, {50, 0}, {100, 0}, {200, 0}, {500, 0}, {1000, 0}, {2000, 0}, {5000, 1}},
		},
		{"beyond the scale", []time.Duration{time.Minute}, []Bucket{{UpToMs: 1e9, Count: 1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, LatencyHistogram(tt.lat))
		})
	}
}

func TestReportOutputs(t *testing.T) {
	r := NewReport()
	r.Comparisons = append(r.Comparisons, Compare("redis", Stat{Name: "a", PerSec: 50}, Stat{Name: "b", PerSec: 100}, ""))
	r.Comparisons = append(r.Comparisons, CompareRounds("orders", []Stat{{Name: "whole", Ops: 40, Handoffs: 1}, {Name: "whole", Ops: 40, Handoffs: 2}},
		[]Stat{{Name: "ceiling", Ops: 40}, {Name: "ceiling", Ops: 40}}, ""))
	r.Sale = &Sale{Units: 10, Buyers: 100, Answers: map[string]int64{"201": 10, "409 SOLD_OUT": 90},
		Timeline:  []Point{{0, 0, 10}, {1, 6, 4}, {2, 10, 0}},
		Histogram: LatencyHistogram([]time.Duration{time.Millisecond, 30 * time.Millisecond})}
	r.SaleCap = []SaleRound{{Cap: true, Label: "on", OrdersPerSec: 60, AdmittedP99ms: 280}, {Label: "off", OrdersPerSec: 64, AdmittedP99ms: 1200},
		{Cap: true, Label: "on", OrdersPerSec: 62, AdmittedP99ms: 300}, {Label: "off", OrdersPerSec: 66, AdmittedP99ms: 1100}}
	require.Equal(t, 0.5, r.Comparisons[0].Ratio)
	md := r.Markdown()
	require.Contains(t, md, "| redis | a | 50 |")
	require.Contains(t, md, "`409 SOLD_OUT` 90")
	require.Contains(t, md, "Medians: orders/s with the cap 0.94x without it; admitted p99 290 ms with, 1150 ms without.")
	require.Contains(t, md, "orders: 3 of 80 payments (3.8%) were handed to their order as a signal", "handoffs are summed over the rounds")

	dir := t.TempDir()
	require.NoError(t, r.WriteJSON(filepath.Join(dir, "r.json")))
	png := filepath.Join(dir, "sale.png")
	require.NoError(t, r.Sale.WriteChart(png))
	b, err := os.ReadFile(png)
	require.NoError(t, err)
	require.True(t, bytes.HasPrefix(b, []byte("\x89PNG")), "a PNG file")
}
