package workflows

import (
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/activities/contract"
)

// CampaignWorkflow runs a campaign (docs/sale-day.md, "Campaigns"): it
// carves each item's allocation from its SKU into the item's campaign SKU
// (flash price, per-buyer limit), runs one SaleWorkflow per item as its
// child, all with the campaign's opens_at and closes_at, sends the
// operators' open, pause, resume, close and void to every item's sale,
// and once every sale has ended gives what is left of each allocation
// back to its SKU and reports per item and in total.
func CampaignWorkflow(ctx workflow.Context, in CampaignInput) (CampaignView, error) {
	c := &campaignRun{in: in, view: CampaignView{ID: in.ID, State: flashsale.SaleStatePrequeue, OpensAt: in.OpensAt, ClosesAt: in.ClosesAt}}
	if err := checkCampaign(in); err != nil {
		return c.view, temporal.NewNonRetryableApplicationError(err.Error(), contract.TypeFor(flashsale.Invalid), nil)
	}
	if err := workflow.SetQueryHandler(ctx, QueryCampaign, func() (CampaignView, error) { return c.view, nil }); err != nil {
		return c.view, err
	}
	c.mu = workflow.NewMutex(ctx)
	for _, u := range []struct {
		name string
		to   flashsale.SaleState
		from []flashsale.SaleState
	}{
		{UpdateSaleOpen, flashsale.SaleStateOpen, []flashsale.SaleState{flashsale.SaleStatePrequeue}},
		{UpdateSalePause, flashsale.SaleStatePaused, []flashsale.SaleState{flashsale.SaleStateOpen}},
		{UpdateSaleResume, flashsale.SaleStateOpen, []flashsale.SaleState{flashsale.SaleStatePaused}},
		{UpdateSaleClose, flashsale.SaleStateClosed, []flashsale.SaleState{flashsale.SaleStatePrequeue, flashsale.SaleStateOpen, flashsale.SaleStatePaused}},
		{UpdateSaleVoid, flashsale.SaleStateClosed, []flashsale.SaleState{flashsale.SaleStatePrequeue, flashsale.SaleStateOpen, flashsale.SaleStatePaused}},
	} {
		if err := workflow.SetUpdateHandlerWithOptions(ctx, u.name, c.control(u.name, u.to),
			workflow.UpdateHandlerOptions{Validator: c.allowed(u.from)}); err != nil {
			return c.view, err
		}
	}
	return c.run(ctx)
}

type campaignRun struct {
	in   CampaignInput
	view CampaignView
	skus []string
	// mu orders the controls; started says every item's sale runs.
	mu      workflow.Mutex
	started bool
}

// campaignStepOptions: the carve and the return write MySQL and Redis, and
// wait (retried) while a SKU still has orders settling; the controls wait
// for each sale's Update.
var campaignStepOptions = workflow.ActivityOptions{
	StartToCloseTimeout:    2 * time.Minute,
	ScheduleToCloseTimeout: time.Hour,
	RetryPolicy: &temporal.RetryPolicy{
		InitialInterval:        time.Second,
		MaximumInterval:        30 * time.Second,
		NonRetryableErrorTypes: contract.NonRetryableErrorTypes,
	},
}

// CheckCampaign refuses terms a campaign cannot run on (Invalid), at every
// door that starts one (the admin API, `starter campaign start`).
func CheckCampaign(in CampaignInput) error {
	err := checkCampaign(in)
	if err == nil {
		// Only at the doors, not in the workflow's own check: a campaign
		// started with a higher limit before this rule still replays.
		err = checkCampaignLimits(in.Items)
	}
	if err != nil {
		return flashsale.Errorf(flashsale.Invalid, "%s", err)
	}
	return nil
}

// CheckCampaignID refuses an id a campaign cannot take (Invalid), for the
// doors that name one in a path: its items' SKUs are named after it
// (contract.CampaignSKU), so it takes a SKU id's alphabet, not an order
// id's (no . : @).
func CheckCampaignID(id string) error {
	if err := checkCampaignID(id); err != nil {
		return flashsale.Errorf(flashsale.Invalid, "%s", err)
	}
	return nil
}

func checkCampaignID(id string) error {
	if !flashsale.ValidSKUID(id) || len(id) > MaxCampaignIDLength {
		return fmt.Errorf("campaign_id must be 1-%d characters of A-Z a-z 0-9 _ -", MaxCampaignIDLength)
	}
	return nil
}

// checkCampaignLimits refuses a per-buyer limit above 1: a campaign item is
// a fair sale, where a buyer's pass buys one unit once, so a higher limit
// would be accepted and silently never apply.
func checkCampaignLimits(items []contract.CampaignItem) error {
	for _, it := range items {
		if it.PerUserLimit > 1 {
			return fmt.Errorf("item %s: per_user_limit %d: a campaign item sells one unit per buyer (one pass, one unit); leave it out or give 1",
				it.SKU, it.PerUserLimit)
		}
	}
	return nil
}

func checkCampaign(in CampaignInput) error {
	if err := checkCampaignID(in.ID); err != nil {
		return err
	}
	switch {
	case in.OpensAt.IsZero() || !in.ClosesAt.After(in.OpensAt):
		return fmt.Errorf("opens_at is required and closes_at must be after it")
	case len(in.Items) == 0 || len(in.Items) > MaxCampaignItems:
		return fmt.Errorf("a campaign has 1-%d items", MaxCampaignItems)
	}
	seen := map[string]bool{}
	for _, it := range in.Items {
		if err := flashsale.CheckSKUID(contract.CampaignSKU(in.ID, it.SKU)); err != nil || seen[it.SKU] {
			return fmt.Errorf("item %q: a SKU id, once per campaign, short enough for its campaign SKU %s", it.SKU, contract.CampaignSKU(in.ID, it.SKU))
		}
		seen[it.SKU] = true
		if it.FlashPrice < 0 || it.Allocation <= 0 || it.PerUserLimit < 0 {
			return fmt.Errorf("item %s: flash_price must not be negative, allocation must be positive", it.SKU)
		}
	}
	return nil
}

func (c *campaignRun) run(ctx workflow.Context) (CampaignView, error) {
	var carved contract.CarvedCampaign
	if err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, campaignStepOptions), contract.CarveCampaign,
		contract.CarveCampaignInput{ID: c.in.ID, Items: c.in.Items}).Get(ctx, &carved); err != nil {
		return c.view, fmt.Errorf("carve the allocations: %w", err)
	}
	c.skus = carved.SKUs
	futures := make([]workflow.ChildWorkflowFuture, len(c.skus))
	for i, sku := range c.skus {
		cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
			WorkflowID: SaleWorkflowID(sku),
			// A campaign's sale is listed with its SKU's orders.
			TypedSearchAttributes: temporal.NewSearchAttributes(SKUIDsKey.ValueSet([]string{sku})),
			// Each sale ends its own orders; a campaign cancelled or
			// terminated leaves them to their controls.
			ParentClosePolicy: enumspb.PARENT_CLOSE_POLICY_ABANDON,
		})
		futures[i] = workflow.ExecuteChildWorkflow(cctx, SaleWorkflow,
			SaleInput{SKU: sku, OpensAt: c.in.OpensAt, ClosesAt: c.in.ClosesAt, PassTTL: c.in.PassTTL})
		c.view.Items = append(c.view.Items, CampaignItemView{CampaignItem: c.in.Items[i], CampaignSKU: sku})
	}
	for _, f := range futures {
		if err := f.GetChildWorkflowExecution().Get(ctx, nil); err != nil {
			return c.view, fmt.Errorf("start an item's sale: %w", err)
		}
	}
	c.started = true
	// The campaign's state follows its sales': they open on their own
	// timers at opens_at.
	workflow.Go(ctx, func(ctx workflow.Context) {
		if workflow.Sleep(ctx, c.in.OpensAt.Sub(workflow.Now(ctx))) == nil && c.view.State == flashsale.SaleStatePrequeue {
			c.view.State = flashsale.SaleStateOpen
		}
	})
	left := make([]int64, len(futures))
	for i, f := range futures {
		var v SaleView
		if err := f.Get(ctx, &v); err != nil {
			return c.view, fmt.Errorf("the sale of %s: %w", c.skus[i], err)
		}
		c.view.Items[i].Report = v.Report
		if v.Report != nil {
			left[i] = v.Report.Available
			c.view.Total.UnitsSold += v.Report.UnitsSold
			c.view.Total.Revenue += v.Report.Revenue
			c.view.Total.Refunds += v.Report.Refunds
		}
	}
	c.view.State = flashsale.SaleStateClosed
	var returned contract.ReturnedCampaignStock
	if err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, campaignStepOptions), contract.ReturnCampaignStock,
		contract.ReturnCampaignInput{ID: c.in.ID, Items: c.in.Items, Left: left}).Get(ctx, &returned); err != nil {
		return c.view, fmt.Errorf("return what is left: %w", err)
	}
	for i, n := range returned.Returned {
		c.view.Items[i].Returned = n
		c.view.Total.Returned += n
	}
	c.view.Ended = true
	if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
		return c.view, err
	}
	return c.view, nil
}

// allowed is a control's validator: the campaign's sales run and the
// campaign is in one of from.
func (c *campaignRun) allowed(from []flashsale.SaleState) func(workflow.Context, SaleControl) error {
	return func(workflow.Context, SaleControl) error {
		for _, st := range from {
			if c.started && c.view.State == st {
				return nil
			}
		}
		return stateConflict(c.view.State)
	}
}

// control sends the Update to every item's sale, then answers the view.
func (c *campaignRun) control(action string, to flashsale.SaleState) func(workflow.Context, SaleControl) (CampaignView, error) {
	return func(ctx workflow.Context, in SaleControl) (CampaignView, error) {
		if err := c.mu.Lock(ctx); err != nil {
			return c.view, err
		}
		defer c.mu.Unlock()
		var done contract.ControlledCampaign
		if err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, campaignStepOptions), contract.ControlCampaign,
			contract.ControlCampaignInput{SKUs: c.skus, Action: action, Reason: in.Reason}).Get(ctx, &done); err != nil {
			return c.view, fmt.Errorf("%s the campaign's sales: %w", action, err)
		}
		if c.view.State != flashsale.SaleStateClosed {
			c.view.State = to
		}
		c.view.Voided = c.view.Voided || action == UpdateSaleVoid
		return c.view, nil
	}
}
