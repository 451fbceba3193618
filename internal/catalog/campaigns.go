package catalog

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/internal/orders"
	"github.com/flashsale/flashsale/workflows"
)

// Campaigns are the operators' campaigns (docs/sale-day.md, "Campaigns"),
// shared by the admin API and `starter campaign`: each is a
// CampaignWorkflow, controlled by the sale's Updates by their names.
type Campaigns struct {
	Temporal  client.Client
	TaskQueue string
}

// Start starts campaign in.ID and answers it once every item's
// allocation is carved and its sale runs (or the carve was refused).
// Invalid terms are Invalid; SaleStateConflict while a campaign of that
// id runs.
func (c Campaigns) Start(ctx context.Context, in workflows.CampaignInput) (workflows.CampaignView, error) {
	if err := workflows.CheckCampaign(in); err != nil {
		return workflows.CampaignView{}, err
	}
	id := workflows.CampaignWorkflowID(in.ID)
	_, err := c.Temporal.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID: id, TaskQueue: c.TaskQueue,
		WorkflowIDReusePolicy:                    enums.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		WorkflowIDConflictPolicy:                 enums.WORKFLOW_ID_CONFLICT_POLICY_FAIL,
		WorkflowExecutionErrorWhenAlreadyStarted: true,
	}, workflows.CampaignWorkflow, in)
	if _, ok := errors.AsType[*serviceerror.WorkflowExecutionAlreadyStarted](err); ok {
		return workflows.CampaignView{}, flashsale.Errorf(flashsale.SaleStateConflict, "campaign %s is running", in.ID)
	}
	if err != nil {
		return workflows.CampaignView{}, orders.CodeDown(fmt.Errorf("start %s: %w", id, err))
	}
	wait, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for {
		v, err := c.View(wait, in.ID)
		if err == nil && len(v.Items) == len(in.Items) && c.running(wait, v) {
			return v, nil
		}
		// A refused carve (an unknown SKU, too little stock) ends the
		// workflow: its failure is the answer.
		if desc, derr := c.Temporal.DescribeWorkflow(wait, id, ""); derr == nil &&
			desc.RawResponse.GetWorkflowExecutionInfo().GetStatus() == enums.WORKFLOW_EXECUTION_STATUS_FAILED {
			return workflows.CampaignView{}, saleError(in.ID, c.Temporal.GetWorkflow(wait, id, "").Get(wait, nil))
		}
		select {
		case <-wait.Done():
			return v, orders.CodeDown(fmt.Errorf("campaign %s started, its sales not running within a minute: %w", in.ID, wait.Err()))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// View is campaign id as its workflow knows it; NoSale when it never ran.
func (c Campaigns) View(ctx context.Context, id string) (workflows.CampaignView, error) {
	res, err := c.Temporal.QueryWorkflow(ctx, workflows.CampaignWorkflowID(id), "", workflows.QueryCampaign)
	if err != nil {
		return workflows.CampaignView{}, saleError(id, err)
	}
	var v workflows.CampaignView
	if err := res.Get(&v); err != nil {
		return workflows.CampaignView{}, fmt.Errorf("decode campaign view: %w", err)
	}
	return v, nil
}

// Control sends one of SaleActions to every item's sale of the campaign,
// answered once each has it. SaleStateConflict when the campaign's state
// does not allow it, NoSale when no campaign of that id runs.
func (c Campaigns) Control(ctx context.Context, id, action, reason string) (workflows.CampaignView, error) {
	if !slices.Contains(SaleActions, action) {
		return workflows.CampaignView{}, flashsale.Errorf(flashsale.Invalid, "unknown campaign action %q", action)
	}
	h, err := c.Temporal.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID: workflows.CampaignWorkflowID(id), UpdateName: action,
		Args: []any{workflows.SaleControl{Reason: reason}}, WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	var v workflows.CampaignView
	if err == nil {
		err = h.Get(ctx, &v)
	}
	if err != nil {
		return workflows.CampaignView{}, saleError(id, err)
	}
	return v, nil
}

// running says every item's sale has published its commitment: its queue
// takes buyers.
func (c Campaigns) running(ctx context.Context, v workflows.CampaignView) bool {
	for _, it := range v.Items {
		sv, err := (Sales{Temporal: c.Temporal}).View(ctx, it.CampaignSKU)
		if err != nil || sv.SeedHash == "" {
			return false
		}
	}
	return true
}
