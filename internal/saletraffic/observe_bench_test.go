package saletraffic

import (
	"testing"
	"time"
)

// The quick sold-out answer counts every refusal here: a map lookup and
// two atomic adds, no Redis.
func BenchmarkObserve(b *testing.B) {
	c := New(nil, []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30})
	c.Observe("1001", 409, true, time.Millisecond)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			c.Observe("1001", 409, true, 300*time.Microsecond)
		}
	})
}
