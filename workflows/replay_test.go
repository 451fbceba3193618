package workflows

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/worker"

	"github.com/flashsale/flashsale"
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
// waiting buyer); then the same paths as OrderWorkflowV2 (v2-*.json: paid,
// cancelled, expired, paid late, rejected, a waitlist offer and the order
// whose unit it took). A change to either type that would break running
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
		"v2-cancelled.json", "v2-expired.json", "v2-late.json", "v2-paid.json", "v2-rejected.json",
		"v2-waitlist-offer.json", "v2-waitlist-released.json",
		"validate-rejected.json",
	}, names)
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			// Each history names its type; the worker registers both.
			r := worker.NewWorkflowReplayer()
			r.RegisterWorkflow(OrderWorkflow)
			r.RegisterWorkflow(OrderWorkflowV2)
			require.NoError(t, r.ReplayWorkflowHistoryFromJSONFile(nil, f))
		})
	}
}

// OrderWorkflowV2's recorded histories ask no version: no version marker,
// no TemporalChangeVersion upsert, and OrderStatus written only when it
// changes (once per order: the start carried PENDING_PAYMENT). A paid order
// is 17 events (OrderWorkflow's settle-paid.json: 20).
func TestOrderWorkflowV2HistoriesAskNoVersion(t *testing.T) {
	files, err := filepath.Glob("testdata/v2-*.json")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	events := map[string]int{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		h, err := client.HistoryFromJSON(bytes.NewReader(data), client.HistoryJSONOptions{})
		require.NoError(t, err)
		evs := h.GetEvents()
		events[filepath.Base(f)] = len(evs)
		start := evs[0].GetWorkflowExecutionStartedEventAttributes()
		require.Equal(t, "OrderWorkflowV2", start.GetWorkflowType().GetName(), f)
		var status string
		require.NoError(t, converter.GetDefaultDataConverter().FromPayload(
			start.GetSearchAttributes().GetIndexedFields()[OrderStatusKey.GetName()], &status), f)
		require.Equal(t, string(flashsale.StatusPendingPayment), status, "%s: started PENDING_PAYMENT", f)
		upserts := 0
		for _, e := range evs {
			require.NotEqual(t, "Version", e.GetMarkerRecordedEventAttributes().GetMarkerName(), "%s: event %d", f, e.GetEventId())
			if e.GetEventType() == enums.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES {
				upserts++
				fields := e.GetUpsertWorkflowSearchAttributesEventAttributes().GetSearchAttributes().GetIndexedFields()
				require.NotContains(t, fields, "TemporalChangeVersion", f)
			}
		}
		require.Equal(t, 1, upserts, "%s: the final status only", f)
	}
	require.Equal(t, 17, events["v2-paid.json"])
	require.Equal(t, 18, events["v2-expired.json"])
	require.Equal(t, 18, events["v2-cancelled.json"])
}
