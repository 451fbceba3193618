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
	b.WriteString("| queue | class | buyers | rate/s | connections | starts early | wins | win rate (95% Wilson CI) | requests | ticks dropped |\n")
	b.WriteString("|---|---|---:|---:|---:|---:|---:|---|---:|---:|\n")
	for _, r := range runs {
		q := queueLabel(r)
		for _, c := range r.Classes {
			fmt.Fprintf(b, "| %s | %s | %d | %.0f | %d | %.0f s | %d | %.3f (%.3f-%.3f) | %d | %d |\n", q, c.Name, c.Buyers, c.Rate,
				c.Conns, c.Early.Seconds(), c.Wins, c.WinRate, c.Lo, c.Hi, c.Requests, c.Skipped)
		}
	}
	b.WriteString("\n| queue | reserved | oversold | undersold | last unit after | requests | Kendall tau (rank, admission) | tau-b (max under ties) | passes outstanding max (max over units left + in-flight cap; over the placement capacity) | last unit to everyone queued told SOLD_OUT | queued never told |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---|---|---|---:|---:|\n")
	for _, r := range runs {
		if !r.Queue {
			fmt.Fprintf(b, "| off | %d | %d | %d | %.1f s | %d | - | - | - | - | - |\n", r.Reserved, r.Oversold, r.Undersold, r.LastUnitS, r.Requests)
			continue
		}
		fmt.Fprintf(b, "| %s | %d | %d | %d | %.1f s | %d | %s (%d ranked, %d admitted at %d moments) | %s (%s) | %d (%+d, cap %d; %+d of capacity up to %d; %d samples) | %.0f ms | %d |\n",
			queueLabel(r), r.Reserved, r.Oversold, r.Undersold, r.LastUnitS, r.Requests, num(r.KendallTau), r.Ranked, r.Admitted, r.AdmissionMoments,
			num(r.KendallTauB), num(r.MaxTauB), r.MaxOutstanding, r.MaxOverCap, r.InFlightCap, r.MaxOverCapacity, r.MaxCapacity, r.Samples, r.SoldOutLagMs, r.NotToldSoldOut)
	}
	verdicts := false
	for _, r := range runs {
		bot, polite := findClass(r, "bot"), findClass(r, "polite")
		if bot == nil || polite == nil {
			continue
		}
		verdicts = true
		verdict := "outside"
		if bot.WinRate >= polite.Lo && bot.WinRate <= polite.Hi {
			verdict = "inside"
		}
		fmt.Fprintf(b, "\nQueue %s: bots win %.1fx as often as polite buyers (bots' rate %.3f, %s the polite 95%% CI %.3f-%.3f; bots minus polite 95%% CI %+.3f..%+.3f).",
			queueLabel(r), ratioOrInf(bot.WinRate, polite.WinRate), bot.WinRate, verdict, polite.Lo, polite.Hi, bot.DiffLo, bot.DiffHi)
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
