package bench

import (
	"context"
	"fmt"
	"math"
	"slices"
)

// Side names one half of a pair in an interleaved schedule.
type Side int

// A is the path measured, B what it is compared with.
const (
	SideA Side = iota
	SideB
)

func (s Side) String() string { return [...]string{"A", "B"}[s] }

// Schedule is the interleaved order of a pair's rounds: A, B, A, B, ...
// rounds times each. Interleaving puts both sides under the same passing
// load of a shared machine, so a lucky or unlucky stretch touches both
// instead of making one side's number.
func Schedule(rounds int) []Side {
	out := make([]Side, 0, 2*rounds)
	for range rounds {
		out = append(out, SideA, SideB)
	}
	return out
}

// Spread summarizes a sample: median with min-max and the interquartile
// range, so a reader sees how far one round could have moved the figure.
type Spread struct {
	Median float64   `json:"median"`
	Min    float64   `json:"min"`
	Max    float64   `json:"max"`
	Q1     float64   `json:"q1"`
	Q3     float64   `json:"q3"`
	N      int       `json:"n"`
	Values []float64 `json:"values,omitempty"`
}

// SpreadOf computes the Spread of values (kept in their measured order in
// Values). Quantiles interpolate linearly between order statistics (the
// "type 7" rule of R and NumPy), so the median of an even sample is the
// mean of its two middle values.
func SpreadOf(values []float64) Spread {
	if len(values) == 0 {
		return Spread{}
	}
	s := slices.Clone(values)
	slices.Sort(s)
	return Spread{
		Median: quantile(s, 0.5), Min: s[0], Max: s[len(s)-1],
		Q1: quantile(s, 0.25), Q3: quantile(s, 0.75), N: len(s), Values: slices.Clone(values),
	}
}

func quantile(sorted []float64, p float64) float64 {
	h := p * float64(len(sorted)-1)
	lo := int(math.Floor(h))
	hi := min(lo+1, len(sorted)-1)
	return sorted[lo] + (h-float64(lo))*(sorted[hi]-sorted[lo])
}

// String is "median [min-max]".
func (s Spread) String() string {
	if s.N == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f [%.2f-%.2f]", s.Median, s.Min, s.Max)
}

// Round measures one round of one side; round counts from 0 per side, so
// a side can name its workflows or keys uniquely.
type Round func(ctx context.Context, round int) (Stat, error)

// Paired runs a and b in the interleaved Schedule and compares them: the
// ratio of each round pair (A's i-th round against B's i-th), reported as
// a median with its spread, and each side summarized by the median of its
// rounds.
func Paired(ctx context.Context, section string, rounds int, a, b Round, note string) (Comparison, error) {
	var as, bs []Stat
	for _, side := range Schedule(rounds) {
		if err := ctx.Err(); err != nil {
			return Comparison{}, err
		}
		run, list := a, &as
		if side == SideB {
			run, list = b, &bs
		}
		s, err := run(ctx, len(*list))
		if err != nil {
			return Comparison{}, fmt.Errorf("%s, round %d of %s: %w", section, len(*list)+1, side, err)
		}
		if s.Errors > 0 {
			return Comparison{}, fmt.Errorf("%s, round %d of %s (%s): %d errors, first: %s",
				section, len(*list)+1, side, s.Name, s.Errors, s.FirstError)
		}
		*list = append(*list, s)
	}
	return CompareRounds(section, as, bs, note), nil
}

// CompareRounds builds a Comparison from paired rounds (as[i] beside
// bs[i]).
func CompareRounds(section string, as, bs []Stat, note string) Comparison {
	n := min(len(as), len(bs))
	perSec := make([]float64, n)
	p99 := make([]float64, n)
	for i := range n {
		perSec[i] = Ratio(as[i].PerSec, bs[i].PerSec)
		p99[i] = Ratio(as[i].P99ms, bs[i].P99ms)
	}
	rs, ps := SpreadOf(perSec), SpreadOf(p99)
	return Comparison{
		Section: section, Measured: MedianStat(as), Against: MedianStat(bs),
		Ratio: rs.Median, Rounds: n, RatioSpread: &rs, P99Ratio: &ps, Note: note,
	}
}

// MedianStat summarizes rounds of one path: each figure is the median of
// the rounds' figures; Ops, Errors, Seconds and Handoffs are totals.
func MedianStat(rounds []Stat) Stat {
	if len(rounds) == 0 {
		return Stat{}
	}
	out := Stat{Name: rounds[0].Name}
	field := func(f func(Stat) float64) float64 {
		v := make([]float64, len(rounds))
		for i, r := range rounds {
			v[i] = f(r)
		}
		return SpreadOf(v).Median
	}
	for _, r := range rounds {
		out.Ops += r.Ops
		out.Errors += r.Errors
		out.Seconds += r.Seconds
		out.Handoffs += r.Handoffs
		if out.FirstError == "" {
			out.FirstError = r.FirstError
		}
	}
	out.PerSec = field(func(s Stat) float64 { return s.PerSec })
	out.P50ms = field(func(s Stat) float64 { return s.P50ms })
	out.P99ms = field(func(s Stat) float64 { return s.P99ms })
	out.P999ms = field(func(s Stat) float64 { return s.P999ms })
	return out
}

// Interleave runs every side's rounds in turn, round by round (A, B, C, A,
// B, C, ...), and returns each side's Stats in order. A round with errors
// stops it.
func Interleave(ctx context.Context, section string, rounds int, sides ...Round) ([][]Stat, error) {
	out := make([][]Stat, len(sides))
	for r := range rounds {
		for i, side := range sides {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			s, err := side(ctx, r)
			if err != nil {
				return nil, fmt.Errorf("%s, round %d of side %d: %w", section, r+1, i+1, err)
			}
			if s.Errors > 0 {
				return nil, fmt.Errorf("%s, round %d of side %d (%s): %d errors, first: %s", section, r+1, i+1, s.Name, s.Errors, s.FirstError)
			}
			out[i] = append(out[i], s)
		}
	}
	return out, nil
}
