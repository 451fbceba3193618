package loadgen

import (
	"math/rand/v2"
	"testing"
	"time"
)

// A buyer told 429 waits what the answer's Retry-After says, plus jitter;
// without the header it guesses by the code.
func TestRetryAfterFollowsTheAnswer(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct {
		name   string
		a      answer
		lo, hi time.Duration
	}{
		{"Retry-After: 2", answer{status: 429, code: "BUSY", retryAfter: 2 * time.Second}, 2 * time.Second, 2200 * time.Millisecond},
		{"busy without the header", answer{status: 429, code: "BUSY"}, 250 * time.Millisecond, 450 * time.Millisecond},
		{"rate limited without the header", answer{status: 429, code: "RATE_LIMITED"}, time.Second, 1200 * time.Millisecond},
	} {
		for range 100 {
			if d := retryAfter(tc.a, rng); d < tc.lo || d >= tc.hi {
				t.Fatalf("%s: waited %v, want [%v, %v)", tc.name, d, tc.lo, tc.hi)
			}
		}
	}
}
