package workflows

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/worker"

	"github.com/flashsale/flashsale"
)

// orderPaths are the order's paths, each with a history recorded from a
// real server by TestRecord (record_test.go) in testdata/<path>.json.
var orderPaths = []string{
	"cancelled", "deferred-paid", "deferred-sold-out", "degraded", "expired", "failed-released", "held-paid", "hold-extended",
	"late-captured", "late", "paid", "refund-required", "rejected", "waitlist-offer", "waitlist-released",
}

// patched are the change ids of the order's patches (docs/versioning.md),
// each with the recorded path that takes it: the only version markers a
// recorded order may carry.
var patched = map[string]string{
	lateCaptureChangeID:     "late-captured",
	failedReleaseChangeID:   "failed-released",
	holdExtensionChangeID:   "hold-extended",
	deductAtPaymentChangeID: "deferred-paid",
}

// patchedToo are the recorded paths that reach a patch recorded under
// another path's name.
var patchedToo = map[string]string{"deferred-sold-out": deductAtPaymentChangeID}

// TestReplayRecordedHistories replays every recorded order history against
// today's OrderWorkflow, and fails when a path has no file or a file names
// no path. A change that would break running orders (a reordered or
// removed activity, timer or search-attribute upsert) makes it fail:
// docs/versioning.md says what to do then.
func TestReplayRecordedHistories(t *testing.T) {
	files, err := filepath.Glob("testdata/*.json")
	require.NoError(t, err)
	names := make([]string, len(files))
	for i, f := range files {
		names[i] = strings.TrimSuffix(filepath.Base(f), ".json")
	}
	require.Equal(t, orderPaths, names, "one history per path: go test -tags integration ./workflows -run TestRecord -record")
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			r := worker.NewWorkflowReplayer()
			r.RegisterWorkflow(OrderWorkflow)
			require.NoError(t, r.ReplayWorkflowHistoryFromJSONFile(nil, f))
		})
	}
}

// The recorded orders ask a version only on a patched path, for its own
// change id (a marker and its TemporalChangeVersion upsert), and write
// OrderStatus only when it changes (once per order at most: the start
// carried PENDING_PAYMENT).
func TestRecordedHistoriesAskNoVersion(t *testing.T) {
	files, err := filepath.Glob("testdata/*.json")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		h, err := client.HistoryFromJSON(bytes.NewReader(data), client.HistoryJSONOptions{})
		require.NoError(t, err)
		evs := h.GetEvents()
		start := evs[0].GetWorkflowExecutionStartedEventAttributes()
		require.Equal(t, OrderWorkflowType, start.GetWorkflowType().GetName(), f)
		var status string
		require.NoError(t, converter.GetDefaultDataConverter().FromPayload(
			start.GetSearchAttributes().GetIndexedFields()[OrderStatusKey.GetName()], &status), f)
		require.Equal(t, string(flashsale.StatusPendingPayment), status, "%s: started PENDING_PAYMENT", f)
		path := strings.TrimSuffix(filepath.Base(f), ".json")
		upserts := 0
		for _, e := range evs {
			if m := e.GetMarkerRecordedEventAttributes(); m.GetMarkerName() == "Version" {
				var id string
				require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(m.GetDetails()["change-id"], &id), f)
				if patchedToo[path] != id {
					require.Equal(t, path, patched[id], "%s: event %d asks version %q", f, e.GetEventId(), id)
				}
			}
			if e.GetEventType() == enums.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES {
				fields := e.GetUpsertWorkflowSearchAttributesEventAttributes().GetSearchAttributes().GetIndexedFields()
				if _, ok := fields["TemporalChangeVersion"]; ok {
					require.NotEmpty(t, patched, f)
					require.Contains(t, patched, changeOf(t, fields["TemporalChangeVersion"]), f)
					continue
				}
				upserts++
			}
		}
		require.LessOrEqual(t, upserts, 1, "%s: the final status only", f)
	}
}

// changeOf is the change id a TemporalChangeVersion upsert names
// ("<change-id>-<version>").
func changeOf(t *testing.T, p *commonpb.Payload) string {
	t.Helper()
	var ids []string
	require.NoError(t, converter.GetDefaultDataConverter().FromPayload(p, &ids))
	require.Len(t, ids, 1)
	i := strings.LastIndex(ids[0], "-")
	require.Positive(t, i, ids[0])
	return ids[0][:i]
}

// held-paid is paid placed as the door places a held SKU's order now, its
// input saying how the SKU deducts (OrderInput.Deduct, which spares
// ReserveStock its booking call): the same events as paid, recorded before
// the field, so the field needed no patch (docs/versioning.md, rule 1).
func TestHeldPaidIssuesPaidsCommands(t *testing.T) {
	read := func(path string) ([]enums.EventType, OrderInput) {
		t.Helper()
		data, err := os.ReadFile(filepath.Join("testdata", path+".json"))
		require.NoError(t, err)
		h, err := client.HistoryFromJSON(bytes.NewReader(data), client.HistoryJSONOptions{})
		require.NoError(t, err)
		var types []enums.EventType
		for _, e := range h.GetEvents() {
			types = append(types, e.GetEventType())
		}
		var in OrderInput
		require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(
			h.GetEvents()[0].GetWorkflowExecutionStartedEventAttributes().GetInput(), &in))
		return types, in
	}
	paid, before := read("paid")
	held, now := read("held-paid")
	require.Equal(t, paid, held)
	require.Empty(t, before.Deduct, "recorded before the field: books as before")
	require.Equal(t, flashsale.DeductHold, now.Deduct)
}
