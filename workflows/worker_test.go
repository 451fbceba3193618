package workflows

import (
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/worker"
)

// registry records what Register puts on a worker.
type registry struct {
	worker.Registry // unused methods panic: Register registers no activity
	workflows       []string
}

func (r *registry) RegisterWorkflow(w any) {
	name := runtime.FuncForPC(reflect.ValueOf(w).Pointer()).Name()
	r.workflows = append(r.workflows, name[strings.LastIndex(name, ".")+1:])
}

// The workflow type names are in every recorded history and in the
// starters: Register must keep them. The activities are registered where
// the process is assembled (internal/app.RegisterActivities).
func TestRegisterPutsEveryWorkflowOnTheWorker(t *testing.T) {
	r := &registry{}
	Register(r)

	require.Equal(t, []string{"OrderWorkflow", "ReconcileWorkflow", "ResyncWorkflow", "SaleWorkflow", "CampaignWorkflow"}, r.workflows)
}
