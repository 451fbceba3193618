package workflows

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/worker"
)

// TestReplayRecordedHistories replays histories recorded from a real server
// (a paid, a cancelled, an expired order with a late payment, and a sold-out
// rejection). A change to OrderWorkflow that would break running orders
// (a reordered or removed activity, timer or search-attribute upsert) makes
// this fail. Re-record with the commands in workflows/testdata/README.md
// only when the change is deliberately versioned.
func TestReplayRecordedHistories(t *testing.T) {
	files, err := filepath.Glob("testdata/*.json")
	require.NoError(t, err)
	require.Len(t, files, 4, "expected the paid, cancelled, expired and rejected histories")
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			r := worker.NewWorkflowReplayer()
			r.RegisterWorkflow(OrderWorkflow)
			require.NoError(t, r.ReplayWorkflowHistoryFromJSONFile(nil, f))
		})
	}
}
