package workflows

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/worker"
)

// TestReplayRecordedSaleHistories replays SaleWorkflow histories recorded
// from the dev server by TestRecordSales (workflows/testdata/sale/README.md):
// a sale opened by its timer, paused, resumed, closed and ended; one opened
// early by the open Update, closed and ended; one voided; since the
// sale-closes-at patch, one closed by its timer at closes_at as the
// closes_at Update moved it, and the close of a SKU sold without a queue. A change to
// SaleWorkflow that would break a running sale makes this fail.
func TestReplayRecordedSaleHistories(t *testing.T) {
	files, err := filepath.Glob("testdata/sale/*.json")
	require.NoError(t, err)
	names := make([]string, len(files))
	for i, f := range files {
		names[i] = filepath.Base(f)
	}
	require.Equal(t, []string{"closes-at-moved.json", "open-update-close.json", "timer-pause-resume-close.json",
		"unqueued-close.json", "void.json"}, names,
		"one history per path: go test -tags integration ./workflows -run TestRecordSales -record")
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			r := worker.NewWorkflowReplayer()
			r.RegisterWorkflow(SaleWorkflow)
			require.NoError(t, r.ReplayWorkflowHistoryFromJSONFile(nil, f))
		})
	}
}

// TestRecordedSaleInputsKeepTheirShape decodes every recorded sale's input
// into today's SaleInput (contract.SaleTerms) and encodes it again: the
// bytes must be the ones in the history.
func TestRecordedSaleInputsKeepTheirShape(t *testing.T) {
	files, err := filepath.Glob("testdata/sale/*.json")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			events := recordedEvents(t, f)
			require.NotNil(t, events[0].Started)
			requireSameJSON[SaleInput](t, events[0].Started.Input)
		})
	}
}

// TestReplayRecordedCampaignHistories replays the CampaignWorkflow
// histories recorded by TestRecordCampaign: a campaign of two SKUs carved,
// opened by its sales' timers, closed together, ended and given back.
func TestReplayRecordedCampaignHistories(t *testing.T) {
	files, err := filepath.Glob("testdata/campaign/*.json")
	require.NoError(t, err)
	require.Len(t, files, 1, "go test -tags integration ./workflows -run TestRecordCampaign -record")
	for _, f := range files {
		r := worker.NewWorkflowReplayer()
		r.RegisterWorkflow(CampaignWorkflow)
		require.NoError(t, r.ReplayWorkflowHistoryFromJSONFile(nil, f), f)
	}
}
