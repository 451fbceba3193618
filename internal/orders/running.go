package orders

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"

	"github.com/flashsale/flashsale/workflows"
)

// Running is the one answer to "does anything of this SKU still run?", as
// the catalog (before a define or preheat), the end of a fair sale and the
// audit ask it. Three things count, each from the store that knows it:
//   - Frozen: units unpaid (PENDING_PAYMENT) orders hold in MySQL;
//   - Orders: order workflows holding the SKU, found on Temporal's
//     visibility by the SkuIds search attribute
//     (workflows.RunningOrdersQuery), which lags by about a second, so an
//     order started in that second can be missed;
//   - Sale: the SKU's sale workflow (workflows.SaleWorkflowID) runs; a fair
//     sale runs until its end has removed its Redis keys.
type Running struct {
	Frozen int64
	Orders int64
	Sale   bool
}

// Idle reports that nothing of the SKU runs.
func (r Running) Idle() bool { return r.Frozen == 0 && r.Orders == 0 && !r.Sale }

// Running answers what of sku still runs (see the type). A SKU MySQL does
// not know gives its UnknownSKU error, without asking Temporal.
func (s *Service) Running(ctx context.Context, sku string) (Running, error) {
	inv, err := s.Orders.Inventory(ctx, sku)
	if err != nil {
		return Running{}, err
	}
	r := Running{Frozen: inv.Frozen}
	if r.Orders, err = s.CountRunningOrders(ctx, sku); err != nil {
		return r, err
	}
	if r.Sale, err = s.SaleRunning(ctx, sku); err != nil {
		return r, err
	}
	return r, nil
}

// CountRunningOrders counts the order workflows of sku that run (Running's
// Orders), alone: the end of a fair sale asks only this, its own workflow
// being the sale that runs.
func (s *Service) CountRunningOrders(ctx context.Context, sku string) (int64, error) {
	resp, err := s.Temporal.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{
		Query: workflows.RunningOrdersQuery(sku),
	})
	if err != nil {
		return 0, temporalErr("count running orders of "+sku, err)
	}
	return resp.GetCount(), nil
}

// RunningOrders lists the order workflows of sku that run (Running's
// Orders), by order id, with their start times; the audit holds each
// against its deadline.
func (s *Service) RunningOrders(ctx context.Context, sku string) (map[string]time.Time, error) {
	prefix := workflows.OrderWorkflowID("")
	open := make(map[string]time.Time)
	err := s.eachRunningOrder(ctx, sku, 0, func(page []*workflow.WorkflowExecutionInfo) error {
		for _, e := range page {
			if id, ok := strings.CutPrefix(e.GetExecution().GetWorkflowId(), prefix); ok {
				open[id] = e.GetStartTime().AsTime()
			}
		}
		return nil
	})
	return open, err
}

// eachRunningOrder calls page with each page of sku's running order
// workflows, pageSize at a time (zero: the server's default).
func (s *Service) eachRunningOrder(ctx context.Context, sku string, pageSize int32, page func([]*workflow.WorkflowExecutionInfo) error) error {
	var token []byte
	for {
		resp, err := s.Temporal.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Query: workflows.RunningOrdersQuery(sku), NextPageToken: token, PageSize: pageSize,
		})
		if err != nil {
			return temporalErr("list running orders of "+sku, err)
		}
		if err := page(resp.GetExecutions()); err != nil {
			return err
		}
		if token = resp.GetNextPageToken(); len(token) == 0 {
			return nil
		}
	}
}

// SaleRunning reports whether sku's sale workflow runs (Running's Sale).
func (s *Service) SaleRunning(ctx context.Context, sku string) (bool, error) {
	d, err := s.Temporal.DescribeWorkflow(ctx, workflows.SaleWorkflowID(sku), "")
	if _, ok := errors.AsType[*serviceerror.NotFound](err); ok {
		return false, nil
	}
	if err != nil {
		return false, temporalErr(fmt.Sprintf("describe the sale of %s", sku), err)
	}
	return d.Status == enums.WORKFLOW_EXECUTION_STATUS_RUNNING, nil
}
