package fairness

import (
	"math"
	"math/rand/v2"
	"testing"
)

func near(t *testing.T, name string, got, want, tol float64) {
	t.Helper()
	if math.Abs(got-want) > tol {
		t.Errorf("%s = %.6f, want %.6f", name, got, want)
	}
}

// Known values: R's prop.test(..., correct = FALSE)$conf.int and the
// closed forms at 0 and n.
func TestWilson(t *testing.T) {
	for _, c := range []struct {
		wins, n int
		lo, hi  float64
	}{
		{81, 263, 0.2553, 0.3662}, // Wikipedia's worked example (Wilson 1927 data)
		{5, 10, 0.2366, 0.7634},
		{0, 10, 0, 0.2775},
		{10, 10, 0.7225, 1},
		{1, 100, 0.001767, 0.05449},
	} {
		lo, hi := Wilson(c.wins, c.n, Z95)
		near(t, "lo", lo, c.lo, 5e-4)
		near(t, "hi", hi, c.hi, 5e-4)
	}
	if lo, hi := Wilson(0, 0, Z95); lo != 0 || hi != 1 {
		t.Errorf("n=0: [%v, %v], want [0, 1]", lo, hi)
	}
}

// tauBNaive is the definition, pair by pair.
func tauBNaive(x, y []float64) float64 {
	var c, d, tx, ty float64
	for i := range x {
		for j := i + 1; j < len(x); j++ {
			sx, sy := math.Copysign(1, x[i]-x[j]), math.Copysign(1, y[i]-y[j])
			switch {
			case x[i] == x[j] && y[i] == y[j]:
			case x[i] == x[j]:
				tx++
			case y[i] == y[j]:
				ty++
			case sx == sy:
				c++
			default:
				d++
			}
		}
	}
	return (c - d) / math.Sqrt((c+d+tx)*(c+d+ty))
}

func TestKendallTauB(t *testing.T) {
	// scipy.stats.kendalltau (tau-b) on the same vectors.
	near(t, "no ties", KendallTauB([]float64{1, 2, 3, 4, 5}, []float64{3, 4, 1, 2, 5}), 0.2, 1e-12)
	near(t, "perfect", KendallTauB([]float64{1, 2, 3, 4}, []float64{10, 20, 30, 40}), 1, 1e-12)
	near(t, "reversed", KendallTauB([]float64{1, 2, 3, 4}, []float64{4, 3, 2, 1}), -1, 1e-12)
	// kendalltau([12, 2, 1, 12, 2], [1, 4, 7, 1, 0]) = -0.47140452079103173
	near(t, "ties in both", KendallTauB([]float64{12, 2, 1, 12, 2}, []float64{1, 4, 7, 1, 0}), -0.47140452079103173, 1e-12)
	// A monotone relation with ties in y only: (n0 - n2) / sqrt(n0 (n0 - n2)).
	near(t, "ties in y", KendallTauB([]float64{1, 2, 3, 4}, []float64{1, 1, 2, 2}), math.Sqrt(4.0/6), 1e-12)
	if v := KendallTauB([]float64{1, 2, 3}, []float64{5, 5, 5}); !math.IsNaN(v) {
		t.Errorf("constant y: %v, want NaN", v)
	}
	if v := KendallTauB([]float64{1}, []float64{1}); !math.IsNaN(v) {
		t.Errorf("one pair: %v, want NaN", v)
	}
	// Against the definition on random data with many ties.
	rng := rand.New(rand.NewPCG(1, 2))
	for range 50 {
		n := 2 + rng.IntN(60)
		x, y := make([]float64, n), make([]float64, n)
		for i := range x {
			x[i], y[i] = float64(rng.IntN(8)), float64(rng.IntN(5))
		}
		want := tauBNaive(x, y)
		got := KendallTauB(x, y)
		if math.IsNaN(want) != math.IsNaN(got) || (!math.IsNaN(want) && math.Abs(got-want) > 1e-9) {
			t.Fatalf("x=%v y=%v: %v, want %v", x, y, got, want)
		}
	}
}

func TestAdmissionTau(t *testing.T) {
	inf := math.Inf(1)
	// Ranks 1-2 admitted together, 3 later, 4-5 never: rank order kept.
	tau, tauB, maxB := admissionTau([]float64{1, 2, 3, 4, 5}, []float64{10, 10, 20, inf, inf})
	near(t, "tau", tau, 1, 1e-12)
	near(t, "tau-b at its bound", tauB, maxB, 1e-12)
	near(t, "bound", maxB, math.Sqrt(8.0/10), 1e-12)
	// Rank 4 admitted before rank 3: one discordant pair of the 9 untied.
	tau, _, _ = admissionTau([]float64{1, 2, 3, 4, 5}, []float64{10, 10, 30, 20, inf})
	near(t, "one swap", tau, (8.0-1)/(8+1), 1e-12)
}

// Newcombe's method 10 on his paper's example 1 (56/70 vs 48/80): the
// difference 0.2, interval 0.0524 to 0.3339.
func TestDiffCINewcombeExample(t *testing.T) {
	lo, hi := DiffCI(56, 70, 48, 80, Z95)
	if math.Abs(lo-0.0524) > 0.0005 || math.Abs(hi-0.3339) > 0.0005 {
		t.Fatalf("got %.4f-%.4f, want 0.0524-0.3339", lo, hi)
	}
	// Equal rates: zero inside; the bar's failure case of a fair draw
	// (bots 13 of 100 against polite 890 of 8900) too.
	lo, hi = DiffCI(13, 100, 890, 8900, Z95)
	if lo > 0 || hi < 0 {
		t.Fatalf("13/100 vs 890/8900: %.4f-%.4f excludes 0", lo, hi)
	}
	lo, _ = DiffCI(73, 100, 642, 8900, Z95)
	if lo <= 0 {
		t.Fatalf("73/100 vs 642/8900: lower bound %.4f, want > 0", lo)
	}
}
