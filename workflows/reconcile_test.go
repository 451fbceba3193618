package workflows

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/activities"
	"github.com/flashsale/flashsale/activities/contract"
)

func obs(sku string, drift, fence int64) contract.StockObservation {
	return contract.StockObservation{SKU: sku, Drift: drift, Fence: fence, Buckets: 4, DBAvailable: 10, RedisUnits: 10 - drift}
}

func TestReconcileWorkflow(t *testing.T) {
	const settle = 45 * time.Second
	torn := func(o contract.StockObservation) contract.StockObservation { o.Torn = true; return o }
	missing := contract.StockObservation{SKU: "a", Missing: true, DBAvailable: 10, Drift: 10}

	type correction struct {
		sku   string
		delta int64
		fence int64
		res   contract.CorrectStockResult
		err   error
	}
	tests := []struct {
		name string
		in   ReconcileInput
		// listed is what ListSKUs returns when the input names no SKU.
		listed  []string
		first   []contract.StockObservation
		second  []contract.StockObservation // nil: no second observation expected
		restore []string
		correct []correction
		want    map[string]ReconcileAction
		applied map[string]int64
	}{
		{
			name:  "in step: one observation, nothing done",
			in:    ReconcileInput{SKUs: []string{"a"}},
			first: []contract.StockObservation{obs("a", 0, 3)},
			want:  map[string]ReconcileAction{"a": ActionInSync},
		},
		{
			name:    "every sku when none is named",
			listed:  []string{"a", "b"},
			first:   []contract.StockObservation{obs("a", 0, 1), obs("b", 0, 1)},
			want:    map[string]ReconcileAction{"a": ActionInSync, "b": ActionInSync},
			applied: map[string]int64{},
		},
		{
			name:    "lost buckets are restored at once, without waiting",
			in:      ReconcileInput{SKUs: []string{"a"}},
			first:   []contract.StockObservation{missing},
			restore: []string{"a"},
			want:    map[string]ReconcileAction{"a": ActionRestored},
		},
		{
			name:  "dry run restores nothing",
			in:    ReconcileInput{SKUs: []string{"a"}, DryRun: true},
			first: []contract.StockObservation{missing},
			want:  map[string]ReconcileAction{"a": ActionWouldRestore},
		},
		{
			name:    "the same drift twice is corrected, both ways",
			in:      ReconcileInput{SKUs: []string{"a", "b"}},
			first:   []contract.StockObservation{obs("a", 3, 7), obs("b", -2, 1)},
			second:  []contract.StockObservation{obs("a", 3, 7), obs("b", -2, 1)},
			correct: []correction{{sku: "a", delta: 3, fence: 7, res: contract.CorrectStockResult{Claimed: true, Applied: 3}}, {sku: "b", delta: -2, fence: 1, res: contract.CorrectStockResult{Claimed: true, Applied: -1}}},
			want:    map[string]ReconcileAction{"a": ActionCorrected, "b": ActionCorrected},
			applied: map[string]int64{"a": 3, "b": -1},
		},
		{
			name:   "a drift that changed is left alone",
			in:     ReconcileInput{SKUs: []string{"a"}},
			first:  []contract.StockObservation{obs("a", 3, 7)},
			second: []contract.StockObservation{obs("a", 2, 7)},
			want:   map[string]ReconcileAction{"a": ActionUnstable},
		},
		{
			name:   "a fence that moved (another run acted) is left alone",
			in:     ReconcileInput{SKUs: []string{"a"}},
			first:  []contract.StockObservation{obs("a", 3, 7)},
			second: []contract.StockObservation{obs("a", 3, 8)},
			want:   map[string]ReconcileAction{"a": ActionUnstable},
		},
		{
			name:   "torn observations are never acted on",
			in:     ReconcileInput{SKUs: []string{"a", "b"}},
			first:  []contract.StockObservation{torn(obs("a", 3, 7)), obs("b", 1, 1)},
			second: []contract.StockObservation{torn(obs("b", 1, 1))},
			want:   map[string]ReconcileAction{"a": ActionBusy, "b": ActionBusy},
		},
		{
			name:    "a lost claim changes nothing",
			in:      ReconcileInput{SKUs: []string{"a"}},
			first:   []contract.StockObservation{obs("a", 3, 7)},
			second:  []contract.StockObservation{obs("a", 3, 7)},
			correct: []correction{{sku: "a", delta: 3, fence: 7}},
			want:    map[string]ReconcileAction{"a": ActionSuperseded},
		},
		{
			name:   "dry run corrects nothing",
			in:     ReconcileInput{SKUs: []string{"a"}, DryRun: true},
			first:  []contract.StockObservation{obs("a", 3, 7)},
			second: []contract.StockObservation{obs("a", 3, 7)},
			want:   map[string]ReconcileAction{"a": ActionWouldCorrect},
		},
		{
			name:   "a failed correction is reported and the others still run",
			in:     ReconcileInput{SKUs: []string{"a", "b"}},
			first:  []contract.StockObservation{obs("a", 3, 7), obs("b", 1, 2)},
			second: []contract.StockObservation{obs("a", 3, 7), obs("b", 1, 2)},
			correct: []correction{
				{sku: "a", delta: 3, fence: 7, err: temporal.NewNonRetryableApplicationError("gone", contract.TypeFor(flashsale.UnknownSKU), nil)},
				{sku: "b", delta: 1, fence: 2, res: contract.CorrectStockResult{Claimed: true, Applied: 1}},
			},
			want:    map[string]ReconcileAction{"a": ActionFailed, "b": ActionCorrected},
			applied: map[string]int64{"b": 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var ts testsuite.WorkflowTestSuite
			env := ts.NewTestWorkflowEnvironment()
			env.RegisterActivity(&activities.Reconciler{})
			env.RegisterActivity(&activities.Activities{})
			env.OnActivity(contract.FindOverdueOrders, mock.Anything, mock.Anything).
				Return(contract.FindOverdueOrdersResult{}, nil).Once()

			skus := tt.in.SKUs
			if len(skus) == 0 {
				skus = tt.listed
				env.OnActivity(contract.ListSKUs, mock.Anything, contract.ListSKUsInput{}).
					Return(contract.ListSKUsResult{SKUs: tt.listed}, nil).Once()
			}
			var observedAt []time.Time
			observe := func(res []contract.StockObservation) func(context.Context, contract.ObserveStockInput) (contract.ObserveStockResult, error) {
				return func(context.Context, contract.ObserveStockInput) (contract.ObserveStockResult, error) {
					observedAt = append(observedAt, env.Now())
					return contract.ObserveStockResult{Observations: res}, nil
				}
			}
			env.OnActivity(contract.ObserveStock, mock.Anything, contract.ObserveStockInput{SKUs: skus}).
				Return(observe(tt.first)).Once()
			if tt.second != nil {
				var again []string
				for _, o := range tt.second {
					again = append(again, o.SKU)
				}
				env.OnActivity(contract.ObserveStock, mock.Anything, contract.ObserveStockInput{SKUs: again}).
					Return(observe(tt.second)).Once()
			}
			for _, sku := range tt.restore {
				env.OnActivity(contract.RestoreStock, mock.Anything, contract.RestoreStockInput{SKU: sku}).
					Return(contract.RestoreStockResult{Restored: true, Buckets: 4, RedisUnits: 10, DBAvailable: 10}, nil).Once()
			}
			for _, c := range tt.correct {
				env.OnActivity(contract.CorrectStock, mock.Anything, mock.MatchedBy(func(in contract.CorrectStockInput) bool {
					return in.SKU == c.sku && in.Delta == c.delta && in.Fence == c.fence && in.CorrectionID != ""
				})).Return(c.res, c.err).Once()
			}

			in := tt.in
			in.Settle = settle
			env.ExecuteWorkflow(ReconcileWorkflow, in)
			require.True(t, env.IsWorkflowCompleted())
			require.NoError(t, env.GetWorkflowError())
			var res ReconcileResult
			require.NoError(t, env.GetWorkflowResult(&res))
			env.AssertExpectations(t)

			got := map[string]ReconcileAction{}
			applied := map[string]int64{}
			for _, s := range res.SKUs {
				got[s.SKU] = s.Action
				if s.Applied != 0 {
					applied[s.SKU] = s.Applied
				}
				if s.Action == ActionFailed {
					require.NotEmpty(t, s.Error)
				}
			}
			require.Equal(t, tt.want, got)
			if tt.applied != nil {
				require.Equal(t, tt.applied, applied)
			}
			require.Equal(t, settle, res.Settle)
			if tt.second != nil {
				require.Len(t, observedAt, 2)
				require.GreaterOrEqual(t, observedAt[1].Sub(observedAt[0]), settle,
					"the second observation comes a full settle time after the first")
			}
		})
	}
}

func TestReconcileWorkflowID(t *testing.T) {
	require.Equal(t, "reconcile-all", ReconcileWorkflowID(""))
	require.Equal(t, "reconcile-1001", ReconcileWorkflowID("1001"))
	require.Equal(t, ReconcileWorkflowID("1001"), ReconcileScheduleID("1001"))
}

// The gate: a confirmed drift over max(MaxCorrect, MaxCorrectPercent of the
// total) is held, not corrected, unless its hold was approved; the net
// closes the orders whose workflow is gone and reports the stuck ones.
func TestReconcileGateAndNet(t *testing.T) {
	big := func(drift, total int64) contract.StockObservation {
		o := obs("a", drift, 5)
		o.Total = total
		return o
	}
	tests := []struct {
		name    string
		first   contract.StockObservation
		hold    *contract.HoldDriftResult // nil: no hold expected
		correct bool
		want    ReconcileAction
	}{
		{name: "a drift within 10 units is corrected", first: big(10, 100), correct: true, want: ActionCorrected},
		{name: "past 10 units it is held", first: big(-11, 100), hold: &contract.HoldDriftResult{HoldID: 7, Status: "PENDING"}, want: ActionHeld},
		{name: "a rejected hold stays held", first: big(50, 1000), hold: &contract.HoldDriftResult{HoldID: 7, Status: "REJECTED"}, want: ActionHeld},
		{name: "an approved hold is corrected", first: big(50, 1000), hold: &contract.HoldDriftResult{HoldID: 7, Status: "APPROVED"}, correct: true, want: ActionCorrected},
		{name: "1% of a large total is corrected", first: big(900, 100_000), correct: true, want: ActionCorrected},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var ts testsuite.WorkflowTestSuite
			env := ts.NewTestWorkflowEnvironment()
			env.RegisterActivity(&activities.Reconciler{})
			env.RegisterActivity(&activities.Activities{})
			stranded := contract.OverdueOrder{OrderID: "o1", Workflow: "TERMINATED", Items: []flashsale.Item{{SKU: "a", Quantity: 1}}}
			env.OnActivity(contract.FindOverdueOrders, mock.Anything, contract.FindOverdueOrdersInput{
				Grace: DefaultOverdueGrace, SKUs: []string{"a"}, Limit: netBatch,
			}).Return(contract.FindOverdueOrdersResult{
				Stranded: []contract.OverdueOrder{stranded},
				Stuck:    []contract.OverdueOrder{{OrderID: "o2", Workflow: "RUNNING", TaskAttempt: 4}},
			}, nil).Once()
			env.OnActivity(contract.CloseStrandedOrders, mock.Anything, contract.CloseStrandedOrdersInput{Orders: []contract.OverdueOrder{stranded}}).
				Return(contract.CloseStrandedOrdersResult{Closed: []string{"o1"}, Released: 1}, nil).Once()
			env.OnActivity(contract.ObserveStock, mock.Anything, mock.Anything).
				Return(contract.ObserveStockResult{Observations: []contract.StockObservation{tt.first}}, nil).Twice()
			if tt.hold != nil {
				env.OnActivity(contract.HoldDrift, mock.Anything, mock.MatchedBy(func(in contract.HoldDriftInput) bool {
					return in.SKU == "a" && in.First.Drift == tt.first.Drift && in.Second.Fence == tt.first.Fence && in.Limit == max(10, tt.first.Total/100)
				})).Return(*tt.hold, nil).Once()
			}
			if tt.correct {
				var holdID int64
				if tt.hold != nil {
					holdID = tt.hold.HoldID
				}
				env.OnActivity(contract.CorrectStock, mock.Anything, mock.MatchedBy(func(in contract.CorrectStockInput) bool {
					return in.Delta == tt.first.Drift && in.HoldID == holdID
				})).Return(contract.CorrectStockResult{Claimed: true, Applied: tt.first.Drift}, nil).Once()
			}
			env.ExecuteWorkflow(ReconcileWorkflow, ReconcileInput{SKUs: []string{"a"}, Settle: time.Minute})
			require.NoError(t, env.GetWorkflowError())
			var res ReconcileResult
			require.NoError(t, env.GetWorkflowResult(&res))
			env.AssertExpectations(t)
			require.Equal(t, tt.want, res.SKUs[0].Action)
			if tt.hold != nil {
				require.Equal(t, tt.hold.HoldID, res.SKUs[0].HoldID)
			}
			require.Equal(t, &NetReport{Closed: []string{"o1"}, Stuck: []string{"o2"}, Released: 1}, res.Net)
		})
	}
}
