package workflows

import (
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/worker"

	"github.com/flashsale/flashsale/activities"
)

// registry records what Register puts on a worker.
type registry struct {
	worker.Registry // unused methods panic
	workflows       []string
	activities      []any
}

func (r *registry) RegisterWorkflow(w any) {
	name := runtime.FuncForPC(reflect.ValueOf(w).Pointer()).Name()
	r.workflows = append(r.workflows, name[strings.LastIndex(name, ".")+1:])
}

func (r *registry) RegisterActivity(a any) { r.activities = append(r.activities, a) }

// The workflow type names are in every recorded history and in the
// starters: Register must keep them, and give the reconciler the order
// activities' stores.
func TestRegisterPutsEveryWorkflowOnTheWorker(t *testing.T) {
	r := &registry{}
	acts := &activities.Activities{}
	Register(r, acts)

	require.Equal(t, []string{"OrderWorkflow", "OrderWorkflowV2", "ReconcileWorkflow", "ResyncWorkflow", "SaleWorkflow"}, r.workflows)
	require.Len(t, r.activities, 2)
	require.Same(t, acts, r.activities[0])
	recon, ok := r.activities[1].(*activities.Reconciler)
	require.True(t, ok)
	require.Equal(t, "order-o-1", recon.OrderWorkflowID("o-1"))
}
