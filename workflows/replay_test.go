package workflows

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/worker"

	"github.com/flashsale/flashsale"
)

// orderPaths are the order's paths, each with a history recorded from a
// real server by TestRecord (record_test.go) in testdata/<path>.json.
var orderPaths = []string{
	"cancelled", "degraded", "expired", "late", "paid", "refund-required", "rejected",
	"waitlist-offer", "waitlist-released",
}

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

// The recorded orders ask no version: no version marker, no
// TemporalChangeVersion upsert, and OrderStatus written only when it
// changes (once per order at most: the start carried PENDING_PAYMENT).
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
		upserts := 0
		for _, e := range evs {
			require.NotEqual(t, "Version", e.GetMarkerRecordedEventAttributes().GetMarkerName(), "%s: event %d", f, e.GetEventId())
			if e.GetEventType() == enums.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES {
				upserts++
				fields := e.GetUpsertWorkflowSearchAttributesEventAttributes().GetSearchAttributes().GetIndexedFields()
				require.NotContains(t, fields, "TemporalChangeVersion", f)
			}
		}
		require.LessOrEqual(t, upserts, 1, "%s: the final status only", f)
	}
}
