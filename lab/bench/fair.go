package bench

import (
	"fmt"
	"math"
	"strings"

	"github.com/flashsale/flashsale/lab/fairness"
)

// writeFair renders the fairness benchmark: each run's classes, then the
// queue's own figures.
func writeFair(b *strings.Builder, runs []fairness.Result) {
	if len(runs) == 0 {
		return
	}
	r0 := runs[0]
	fmt.Fprintf(b, "\nFairness (issue 23): %d units, the same crowd with the fair queue off (today's race: 429 and retry) and on "+
		"(pre-queue, shuffle at the open, passes in rank order), its buyers polling their place or holding their looks (\"long poll\": "+
		"`queue/me?wait=`, over HTTP/2 without TLS); a buyer is one identity, its requests an open-loop schedule "+
		"(a tick dropped when its connections are busy, or while its look is held); win = a 201:\n\n", r0.Units)
	b.WriteString("| queue | class | buyers | rate/s | connections | starts early | wins | win rate (95% Wilson CI) | minus polite (95% CI) | requests | ticks dropped |\n")
	b.WriteString("|---|---|---:|---:|---:|---:|---:|---|---|---:|---:|\n")
	for _, r := range runs {
		q := queueLabel(r)
		for _, c := range r.Classes {
			diff := "-"
			if c.Name != r.Classes[0].Name {
				diff = fmt.Sprintf("%+.3f (%+.3f..%+.3f)", c.WinRate-r.Classes[0].WinRate, c.DiffLo, c.DiffHi)
			}
			fmt.Fprintf(b, "| %s | %s | %d | %.0f | %d | %.0f s | %d | %.3f (%.3f-%.3f) | %s | %d | %d |\n", q, c.Name, c.Buyers, c.Rate,
				c.Conns, c.Early.Seconds(), c.Wins, c.WinRate, c.Lo, c.Hi, diff, c.Requests, c.Skipped)
		}
	}
	b.WriteString("\n| queue | reserved | oversold | undersold | last unit after | requests | Kendall tau (rank, admission) | winners beyond the first units' ranks | tau-b (max under ties) | passes outstanding max (max over units left + in-flight cap; over the placement capacity) | last unit to everyone queued told SOLD_OUT | queued never told |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---|---:|---|---|---:|---:|\n")
	for _, r := range runs {
		if !r.Queue {
			fmt.Fprintf(b, "| off | %d | %d | %d | %.1f s | %d | - | - | - | - | - | - |\n", r.Reserved, r.Oversold, r.Undersold, r.LastUnitS, r.Requests)
			continue
		}
		fmt.Fprintf(b, "| %s | %d | %d | %d | %.1f s | %d | %s (%d ranked, %d admitted at %d moments) | %d | %s (%s) | %d (%+d, cap %d; %+d of capacity up to %d; %d samples) | %.0f ms | %d |\n",
			queueLabel(r), r.Reserved, r.Oversold, r.Undersold, r.LastUnitS, r.Requests, num(r.KendallTau), r.Ranked, r.Admitted, r.AdmissionMoments,
			r.OutOfRank, num(r.KendallTauB), num(r.MaxTauB), r.MaxOutstanding, r.MaxOverCap, r.InFlightCap, r.MaxOverCapacity, r.MaxCapacity, r.Samples, r.SoldOutLagMs, r.NotToldSoldOut)
	}
	verdicts := false
	for _, r := range runs {
		polite := findClass(r, "polite")
		if polite == nil {
			continue
		}
		for _, c := range r.Classes[1:] {
			verdicts = true
			verdict := "excludes 0: told apart from chance"
			if c.DiffLo <= 0 && c.DiffHi >= 0 {
				verdict = "contains 0"
			}
			fmt.Fprintf(b, "\nQueue %s: %s win %.2fx as often as polite buyers (%.3f against %.3f; the difference's 95%% CI %+.3f..%+.3f %s).",
				queueLabel(r), c.Name, ratioOrInf(c.WinRate, polite.WinRate), c.WinRate, polite.WinRate, c.DiffLo, c.DiffHi, verdict)
		}
	}
	if verdicts {
		b.WriteString("\n")
	}
}

// queueLabel names a run in the tables: off, on (polling), or on with
// the long poll.
func queueLabel(r fairness.Result) string {
	switch {
	case !r.Queue:
		return "off"
	case r.LongPollS > 0:
		return fmt.Sprintf("on, long poll %.0f s", r.LongPollS)
	}
	return "on"
}

func findClass(r fairness.Result, name string) *fairness.ClassResult {
	for i := range r.Classes {
		if r.Classes[i].Name == name {
			return &r.Classes[i]
		}
	}
	return nil
}

func ratioOrInf(a, b float64) float64 {
	if b == 0 {
		return math.Inf(1)
	}
	return a / b
}

func num(v float64) string {
	if math.IsNaN(v) {
		return "n/a"
	}
	return fmt.Sprintf("%.3f", v)
}
