package apptest

import (
	"testing"

	"github.com/flashsale/flashsale/internal/audit"
)

// AuditDeps are the invariant checker's (internal/audit, `starter check`)
// dependencies on the system's connections.
func (s *System) AuditDeps() audit.Deps {
	return audit.Deps{Stock: s.Stock, Orders: s.Orders, Temporal: s.Temporal}
}

// CheckSoldOut reports on t, without stopping it, a settled sale that did
// not sell exactly its stock, for a sale whose buyers outnumbered its units
// and kept trying to the end (the fault and scale-out suites): units sold
// past the stock or without a paid order (audit.SKUState.Oversold), or
// units lost or left unsold (Undersold). note ends the undersold report
// (what the buyers did). It returns both counts for the suite's summary.
func CheckSoldOut(t testing.TB, st audit.SKUState, note string) (oversold, undersold int64) {
	t.Helper()
	oversold, undersold = st.Oversold(), st.Undersold()
	if oversold != 0 {
		t.Errorf("oversold %d: total %d sold %d paid units %d", oversold, st.Total, st.Sold, st.PaidUnits)
	}
	if undersold != 0 {
		t.Errorf("undersold %d: total %d sold %d available %d frozen %d redis drift %d%s",
			undersold, st.Total, st.Sold, st.Available, st.Frozen, st.Redis.Drift, note)
	}
	return oversold, undersold
}

// ReportAudit logs on t the checker's view of a settled sale (its first
// SKU) and its warnings, and reports every violation as an error. It
// returns the number of violations, for the suite's summary.
func ReportAudit(t testing.TB, rep audit.Report) int {
	t.Helper()
	if len(rep.SKUs) > 0 {
		st := rep.SKUs[0]
		t.Logf("after settle: total %d available %d frozen %d sold %d paid units %d, redis %+v, open workflows %d",
			st.Total, st.Available, st.Frozen, st.Sold, st.PaidUnits, st.Redis, st.OpenWorkflows)
	}
	for _, w := range rep.Warnings {
		t.Logf("checker warning: %s", w)
	}
	for _, v := range rep.Violations {
		t.Errorf("violation: %s order=%s txn=%s expected=%v actual=%v: %s", v.Kind, v.OrderID, v.TransactionID, v.Expected, v.Actual, v.Detail)
	}
	return len(rep.Violations)
}
