package bench

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestMeasureCountsEveryCallOnce(t *testing.T) {
	var calls atomic.Int64
	seen := make([]atomic.Bool, 500)
	s := Measure(context.Background(), "x", 500, 16, func(_ context.Context, i int) error {
		if seen[i].Swap(true) {
			t.Errorf("call %d twice", i)
		}
		calls.Add(1)
		if i%100 == 0 {
			return errors.New("boom")
		}
		return nil
	})
	require.Equal(t, int64(500), calls.Load())
	require.Equal(t, int64(500), s.Ops)
	require.Equal(t, int64(5), s.Errors)
	require.Equal(t, "boom", s.FirstError)
	require.Positive(t, s.PerSec)
}

func TestSummarizePercentiles(t *testing.T) {
	lat := make([]time.Duration, 1000)
	for i := range lat {
		lat[i] = time.Duration(1000-i) * time.Millisecond // reverse order: must be sorted
	}
	s := Summarize("x", lat, 2*time.Second)
	require.Equal(t, 500.0, s.PerSec)
	require.Equal(t, 500.0, s.P50ms)
	require.Equal(t, 990.0, s.P99ms)
	require.Equal(t, 999.0, s.P999ms)
}
