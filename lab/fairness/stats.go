// Package fairness is the fairness benchmark of issue 23 (item 6): buyer
// classes that differ only in how hard they push (polite, eager, bots),
// played against a sale with the fair queue off (today's race) and on, and
// the statistics that judge the outcome: each class's win rate with a
// Wilson interval, and Kendall's tau between queue rank and admission.
package fairness

import (
	"cmp"
	"math"
	"slices"
)

// Z95 is the standard normal quantile of a two-sided 95% interval.
const Z95 = 1.959963984540054

// Wilson is the Wilson score interval of a binomial proportion: wins out of
// n at confidence z (Z95 for 95%). It stays inside [0, 1] and behaves at 0
// and n wins, where the normal approximation collapses to a point; the
// bots' class is small, so that matters here. n = 0 gives [0, 1].
func Wilson(wins, n int, z float64) (lo, hi float64) {
	if n <= 0 {
		return 0, 1
	}
	nf := float64(n)
	p := float64(wins) / nf
	z2 := z * z
	den := 1 + z2/nf
	mid := (p + z2/(2*nf)) / den
	half := z / den * math.Sqrt(p*(1-p)/nf+z2/(4*nf*nf))
	return max(0, mid-half), min(1, mid+half)
}

// KendallTauB is Kendall's tau-b between x and y (equal lengths): the
// concordant minus discordant pairs over the geometric mean of the pairs
// untied in x and untied in y, so ties (buyers admitted by the same move of
// the serving counter, in the same millisecond) neither count for nor
// against. It is NaN when either side is constant or fewer than two pairs
// are given. O(n log n): Knight's algorithm (sort by x then y, count the
// swaps a merge sort by y needs).
func KendallTauB(x, y []float64) float64 {
	n := len(x)
	if n != len(y) || n < 2 {
		return math.NaN()
	}
	type pair struct{ x, y float64 }
	ps := make([]pair, n)
	for i := range ps {
		ps[i] = pair{x[i], y[i]}
	}
	slices.SortFunc(ps, func(a, b pair) int {
		if c := cmp.Compare(a.x, b.x); c != 0 {
			return c
		}
		return cmp.Compare(a.y, b.y)
	})
	n0 := int64(n) * int64(n-1) / 2
	// Pairs tied in x (n1), and tied in both (n3).
	var n1, n3 int64
	for i := 0; i < n; {
		j := i
		for j < n && ps[j].x == ps[i].x {
			j++
		}
		n1 += int64(j-i) * int64(j-i-1) / 2
		for k := i; k < j; {
			l := k
			for l < j && ps[l].y == ps[k].y {
				l++
			}
			n3 += int64(l-k) * int64(l-k-1) / 2
			k = l
		}
		i = j
	}
	ys := make([]float64, n)
	for i, p := range ps {
		ys[i] = p.y
	}
	swaps := mergeCount(ys, make([]float64, n))
	// Pairs tied in y (n2), counted on the sorted ys.
	var n2 int64
	for i := 0; i < n; {
		j := i
		for j < n && ys[j] == ys[i] {
			j++
		}
		n2 += int64(j-i) * int64(j-i-1) / 2
		i = j
	}
	// Concordant minus discordant among pairs untied in both.
	s := n0 - n1 - n2 + n3 - 2*swaps
	den := math.Sqrt(float64(n0-n1)) * math.Sqrt(float64(n0-n2))
	if den == 0 {
		return math.NaN()
	}
	return float64(s) / den
}

// mergeCount sorts a ascending and returns the number of inversions (pairs
// i < j with a[i] > a[j]; equal values are not inversions).
func mergeCount(a, buf []float64) int64 {
	if len(a) < 2 {
		return 0
	}
	mid := len(a) / 2
	inv := mergeCount(a[:mid], buf[:mid]) + mergeCount(a[mid:], buf[mid:])
	i, j, k := 0, mid, 0
	for i < mid && j < len(a) {
		if a[j] < a[i] {
			buf[k] = a[j]
			inv += int64(mid - i)
			j++
		} else {
			buf[k] = a[i]
			i++
		}
		k++
	}
	k += copy(buf[k:], a[i:mid])
	copy(buf[k:], a[j:])
	copy(a, buf[:len(a)])
	return inv
}

// DiffCI is Newcombe's hybrid score interval (his method 10) for the
// difference of two binomial proportions, wins1/n1 - wins2/n2, at
// confidence z, built from each side's Wilson interval. Zero inside it
// means the data cannot tell the two rates apart at that confidence.
//
// It is reported beside issue 23's bar (the bots' rate inside the polite
// buyers' interval), which judges a 100-buyer class's point estimate
// against an 8,900-buyer class's narrow interval: with 1,000 units for
// 10,000 buyers drawn by a perfectly fair lottery, the bots win 10 +- 3
// units and their rate lands inside the polite interval (0.094-0.106) only
// when they win exactly 10, about one run in eight. This interval is the
// test of equal rates that accounts for both samples' noise.
func DiffCI(wins1, n1, wins2, n2 int, z float64) (lo, hi float64) {
	p1 := float64(wins1) / float64(max(n1, 1))
	p2 := float64(wins2) / float64(max(n2, 1))
	l1, u1 := Wilson(wins1, n1, z)
	l2, u2 := Wilson(wins2, n2, z)
	d := p1 - p2
	lo = d - math.Sqrt((p1-l1)*(p1-l1)+(u2-p2)*(u2-p2))
	hi = d + math.Sqrt((u1-p1)*(u1-p1)+(p2-l2)*(p2-l2))
	return lo, hi
}
