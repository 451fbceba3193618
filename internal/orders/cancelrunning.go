package orders

import (
	"context"
	"fmt"

	"go.temporal.io/api/workflowservice/v1"

	"github.com/flashsale/flashsale/workflows"
)

// CancelRunning sends the cancel signal, with reason, to every running
// order workflow holding sku (found through the SkuIds search attribute),
// and returns how many it signalled. An order that finished meanwhile is
// skipped. Each cancelled order compensates as a buyer's cancel does: its
// units go back (a void of a sale, SaleWorkflow). Paid orders have
// finished and are not touched. Visibility lags by about a second, so an
// order started just before the call may be missed; the caller repeats it.
func (s *Service) CancelRunning(ctx context.Context, sku, reason string) (int, error) {
	var n int
	var token []byte
	for {
		resp, err := s.Temporal.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Query: workflows.RunningOrdersQuery(sku), NextPageToken: token, PageSize: 1000,
		})
		if err != nil {
			return n, temporalErr("list running orders of "+sku, err)
		}
		for _, e := range resp.GetExecutions() {
			id := e.GetExecution().GetWorkflowId()
			err := s.Temporal.SignalWorkflow(ctx, id, "", workflows.SignalCancel, workflows.CancelRequest{Reason: reason})
			switch {
			case err == nil:
				n++
			case isNotFound(err):
			default:
				return n, temporalErr(fmt.Sprintf("cancel %s", id), err)
			}
		}
		if token = resp.GetNextPageToken(); len(token) == 0 {
			return n, nil
		}
	}
}
