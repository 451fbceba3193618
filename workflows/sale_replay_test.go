package workflows

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/worker"
)

// TestReplayRecordedSaleHistories replays SaleWorkflow histories recorded
// from the dev server (workflows/testdata/sale/README.md): a sale closed,
// then settled, checked, reported and removed from Redis; one voided with a
// paid order refunded, then ended. A change to
// SaleWorkflow that would break a running sale makes this fail.
func TestReplayRecordedSaleHistories(t *testing.T) {
	files, err := filepath.Glob("testdata/sale/*.json")
	require.NoError(t, err)
	names := make([]string, len(files))
	for i, f := range files {
		names[i] = filepath.Base(f)
	}
	require.Equal(t, []string{"end-close.json", "end-void.json"}, names)
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
