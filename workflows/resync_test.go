package workflows

import (
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/flashsale/flashsale/activities"
	"github.com/flashsale/flashsale/activities/contract"
)

func TestResyncWorkflow(t *testing.T) {
	tests := []struct {
		name string
		// signals are sent at these offsets while the first pass runs
		// (it takes 10 s of test time).
		signals    []time.Duration
		outages    int // ResyncStock attempts failing first (Redis down)
		wantPasses int
	}{
		{name: "one request", wantPasses: 1},
		{name: "redis down for a while", outages: 5, wantPasses: 1},
		{name: "requests during a pass cause one more pass", signals: []time.Duration{2 * time.Second, 3 * time.Second}, wantPasses: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var ts testsuite.WorkflowTestSuite
			env := ts.NewTestWorkflowEnvironment()
			env.RegisterActivity(&activities.Reconciler{})
			in := contract.ResyncStockInput{SKU: "1001"}
			if tt.outages > 0 {
				env.OnActivity(contract.ResyncStock, mock.Anything, in).
					Return(contract.ResyncStockResult{}, temporal.NewApplicationError("dial tcp: connection refused", "")).Times(tt.outages)
			}
			env.OnActivity(contract.ResyncStock, mock.Anything, in).After(10*time.Second).
				Return(contract.ResyncStockResult{Flag: 3, Applied: -2}, nil).Times(tt.wantPasses)
			for _, at := range tt.signals {
				env.RegisterDelayedCallback(func() { env.SignalWorkflow(SignalResyncRequested, nil) }, at)
			}

			env.ExecuteWorkflow(ResyncWorkflow, ResyncInput{SKU: "1001"})

			require.True(t, env.IsWorkflowCompleted())
			require.NoError(t, env.GetWorkflowError())
			var res ResyncResult
			require.NoError(t, env.GetWorkflowResult(&res))
			require.Equal(t, tt.wantPasses, res.Passes)
			require.EqualValues(t, -2, res.Last.Applied)
			env.AssertExpectations(t)
		})
	}
}
