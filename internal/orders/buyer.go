package orders

import (
	"context"
	"strings"
	"time"

	"go.temporal.io/api/workflowservice/v1"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/workflows"
)

// BuyerOrder is one of a buyer's orders as Temporal's visibility lists it.
type BuyerOrder struct {
	OrderID   string    `json:"order_id"`
	Status    string    `json:"status"`
	Execution string    `json:"workflow_status"`
	StartedAt time.Time `json:"started_at"`
}

// BuyerOrders lists the orders of userID, newest first, at most limit,
// found in Temporal's visibility by the keyed hash of the id (UserDigest):
// the operator gives the id, the store never sees it.
func (s *Service) BuyerOrders(ctx context.Context, userID string, limit int) (string, []BuyerOrder, error) {
	digest := s.UserDigest(userID)
	if err := flashsale.CheckID("user_id", userID, flashsale.MaxIDLength); err != nil {
		return digest, nil, err
	}
	var out []BuyerOrder
	var token []byte
	for len(out) < limit {
		resp, err := s.Temporal.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Query: workflows.BuyerOrdersQuery(digest), NextPageToken: token, PageSize: int32(min(limit, 1000)),
		})
		if err != nil {
			return digest, nil, temporalErr("list the orders of a buyer", err)
		}
		for _, e := range resp.GetExecutions() {
			o := BuyerOrder{OrderID: strings.TrimPrefix(e.GetExecution().GetWorkflowId(), workflows.OrderWorkflowID("")),
				Execution: e.GetStatus().String(), StartedAt: e.GetStartTime().AsTime()}
			if p := e.GetSearchAttributes().GetIndexedFields()[workflows.OrderStatusKey.GetName()]; p != nil {
				o.Status = strings.Trim(string(p.GetData()), `"`)
			}
			out = append(out, o)
		}
		if token = resp.GetNextPageToken(); len(token) == 0 {
			break
		}
	}
	return digest, out[:min(len(out), limit)], nil
}
