package workflows

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/worker"
)

// TestReplayRecordedHistories replays histories recorded from a real server
// (a paid, a cancelled, an expired order with a late payment, and a sold-out
// rejection, all from before the bounded-payment change; then an order that
// got another order's transaction and was paid with its own, and one that
// got it and expired; then, judged by arrival time, a payment received in
// time and delivered in the grace, one received late, and an order left to
// expire; then, settled inside the workflow task, a paid, a cancelled, an
// expired order, a late payment, a rejection, a degraded (MySQL-only)
// order, and a waitlist offer with the order whose unit it took; then an
// order started past the doors with a reserved wl- id, rejected by the
// validate-order version; then, with the waitlist-offer-id version, a
// cancelled order whose unit went to an offer named by the digest of its
// id, and an offer rejected at the limit whose unit went to the next
// waiting buyer). A change to OrderWorkflow that would break running
// orders (a reordered or removed activity, timer or search-attribute upsert)
// makes this fail. Re-record with the commands in workflows/testdata/README.md
// only when the change is deliberately versioned.
func TestReplayRecordedHistories(t *testing.T) {
	files, err := filepath.Glob("testdata/*.json")
	require.NoError(t, err)
	names := make([]string, len(files))
	for i, f := range files {
		names[i] = filepath.Base(f)
	}
	require.Equal(t, []string{
		"arrival-expired.json", "arrival-late.json", "arrival-paid.json",
		"cancelled.json", "conflict-expired.json", "conflict-paid.json", "expired.json",
		"offerid-cancelled.json", "offerid-rejected-next.json", "paid.json", "rejected.json",
		"settle-cancelled.json", "settle-degraded.json", "settle-expired.json", "settle-late.json", "settle-paid.json",
		"settle-rejected.json", "settle-waitlist-offer.json", "settle-waitlist-released.json",
		"validate-rejected.json",
	}, names)
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			r := worker.NewWorkflowReplayer()
			r.RegisterWorkflow(OrderWorkflow)
			require.NoError(t, r.ReplayWorkflowHistoryFromJSONFile(nil, f))
		})
	}
}
