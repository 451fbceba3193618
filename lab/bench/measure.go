// Package bench measures the hot paths of a flash sale beside their
// ceilings, in one run on one machine, so results are read as ratios rather
// than absolute numbers that drift with the machine's other load. The
// starter's `bench` command runs it and writes JSON, Markdown and a chart.
package bench

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Stat is one measured path.
type Stat struct {
	Name    string  `json:"name"`
	Ops     int64   `json:"ops"`
	Errors  int64   `json:"errors"`
	Seconds float64 `json:"seconds"`
	PerSec  float64 `json:"per_sec"`
	P50ms   float64 `json:"p50_ms"`
	P99ms   float64 `json:"p99_ms"`
	P999ms  float64 `json:"p999_ms"`
	// FirstError explains Errors; empty when there were none.
	FirstError string `json:"first_error,omitempty"`
	// Handoffs counts whole orders whose payment the order could not take
	// within the API's handoff time, handed to it as a signal and followed
	// to their outcome (see Orders).
	Handoffs int64 `json:"handoffs,omitempty"`
}

// Measure calls call n times from `concurrency` goroutines and reports
// throughput and latency percentiles of one call.
func Measure(ctx context.Context, name string, n, concurrency int, call func(ctx context.Context, i int) error) Stat {
	var next atomic.Int64
	lat := make([]time.Duration, n)
	var errs atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	start := time.Now()
	for range concurrency {
		wg.Go(func() {
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				t0 := time.Now()
				if err := call(ctx, i); err != nil {
					errs.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
				}
				lat[i] = time.Since(t0)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	done := min(int(next.Load()), n)
	lat = lat[:done]
	s := Summarize(name, lat, elapsed)
	s.Errors = errs.Load()
	if v := firstErr.Load(); v != nil {
		s.FirstError = v.(string)
	}
	return s
}

// Summarize turns latencies and wall time into a Stat. lat is sorted in place.
func Summarize(name string, lat []time.Duration, elapsed time.Duration) Stat {
	slices.Sort(lat)
	s := Stat{Name: name, Ops: int64(len(lat)), Seconds: elapsed.Seconds()}
	if elapsed > 0 {
		s.PerSec = float64(len(lat)) / elapsed.Seconds()
	}
	s.P50ms, s.P99ms, s.P999ms = ms(Percentile(lat, 0.50)), ms(Percentile(lat, 0.99)), ms(Percentile(lat, 0.999))
	return s
}

// Percentile of sorted latencies, nearest-rank.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[int(p*float64(len(sorted)-1))]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// Ratio is a / b, or 0 when b is 0.
func Ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}
