package bench

import (
	"fmt"
	"strings"
)

// SettleRound is one round of the settlement A/B: Pays payments of orders
// placed before a backlog of Backlog new reservations started at once.
type SettleRound struct {
	Priority bool    `json:"priority"`
	Pays     int     `json:"pays"`
	Backlog  int     `json:"backlog"`
	PayP50ms float64 `json:"pay_p50_ms"`
	PayP99ms float64 `json:"pay_p99_ms"`
	// BacklogP99ms is the backlog's reservations' answer p99; DrainS
	// when its last one was answered, from the backlog's start.
	BacklogP99ms float64 `json:"backlog_p99_ms"`
	DrainS       float64 `json:"drain_s"`
	// PaidBeforeDrain counts payments answered before the backlog's last
	// reservation was.
	PaidBeforeDrain int `json:"paid_before_drain"`
	// Handoffs are payments the order did not take within the API's wait
	// (handed over as a signal): their latency is the wait.
	Handoffs int `json:"handoffs"`
}

// SettleResult is the settlement A/B (issue 23, item 5).
type SettleResult struct {
	Rounds []SettleRound `json:"rounds"`
	// P99Ratio is each round pair's settlement p99 with the priority over
	// without it: <= 0.5 is the bar.
	P99Ratio Spread `json:"p99_ratio"`
	Note     string `json:"note"`
}

func writeSettle(b *strings.Builder, s *SettleResult) {
	if s == nil || len(s.Rounds) == 0 {
		return
	}
	fmt.Fprintf(b, "\nSettlement under a backlog of new reservations (issue 23), priority on and off interleaved: %s\n\n", s.Note)
	b.WriteString("| round | priority | payments | backlog | pay p50 ms | pay p99 ms | backlog p99 ms | backlog drained after | paid before it drained | handed over as a signal |\n")
	b.WriteString("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for i, r := range s.Rounds {
		on := "off"
		if r.Priority {
			on = "on"
		}
		fmt.Fprintf(b, "| %d | %s | %d | %d | %.0f | %.0f | %.0f | %.1f s | %d | %d |\n", i+1, on, r.Pays, r.Backlog,
			r.PayP50ms, r.PayP99ms, r.BacklogP99ms, r.DrainS, r.PaidBeforeDrain, r.Handoffs)
	}
	fmt.Fprintf(b, "\nSettlement p99 with the priority over without it, per round pair: %s (the issue's bar: <= 0.5).\n", spreadCell(&s.P99Ratio))
}
