package bench

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/internal/orders"
	"github.com/flashsale/flashsale/workflows"
)

// The order paths whose server cost the bench reads.
const (
	PathPaid      = "paid"
	PathExpired   = "expired"
	PathCancelled = "cancelled"
	PathRejected  = "rejected"
	PathCeiling   = "ceiling"
)

// PathCost is what one kind of order cost the server, read from
// DescribeWorkflowExecution once its workflow had closed. Server CPU
// follows state transitions (each one a mutable-state write); events are
// the history's length; upserts are its search-attribute upserts, each a
// visibility write on top of the start's and the close's.
type PathCost struct {
	Server    string `json:"server"`
	Path      string `json:"path"`
	Workflows int    `json:"workflows"`
	// Status is the order's final status (the workflow's, for the ceiling).
	Status string `json:"status"`
	// Transitions and Events are medians over Workflows; the ranges show
	// paths whose cost depends on timing (an expiry racing a task, say).
	Transitions    int64 `json:"transitions"`
	TransitionsMin int64 `json:"transitions_min"`
	TransitionsMax int64 `json:"transitions_max"`
	Events         int64 `json:"events"`
	EventsMin      int64 `json:"events_min"`
	EventsMax      int64 `json:"events_max"`
	// Upserts is the median count of UpsertWorkflowSearchAttributes events.
	Upserts    int64 `json:"upserts"`
	UpsertsMin int64 `json:"upserts_min"`
	UpsertsMax int64 `json:"upserts_max"`
	// WorkflowType is the type the path's workflows ran as.
	WorkflowType string `json:"workflow_type,omitempty"`
}

// WorkflowCost is one closed workflow's cost.
type WorkflowCost struct {
	Transitions, Events, Upserts int64
	Status                       enums.WorkflowExecutionStatus
	Type                         string
}

// DescribeCost waits for the workflow to close (ctx bounds the wait) and
// reads its state transitions, history length and type, then counts its
// history's search-attribute upserts.
func DescribeCost(ctx context.Context, c client.Client, workflowID string) (WorkflowCost, error) {
	// The result (or failure) itself is not the question: only that the
	// workflow has closed, so its counts are final.
	_ = c.GetWorkflow(ctx, workflowID, "").Get(ctx, nil)
	d, err := c.DescribeWorkflow(ctx, workflowID, "")
	if err != nil {
		return WorkflowCost{}, fmt.Errorf("describe %s: %w", workflowID, err)
	}
	info := d.RawResponse.GetWorkflowExecutionInfo()
	if info.GetStatus() == enums.WORKFLOW_EXECUTION_STATUS_RUNNING {
		return WorkflowCost{}, fmt.Errorf("describe %s: still running: %w", workflowID, ctx.Err())
	}
	cost := WorkflowCost{Transitions: info.GetStateTransitionCount(), Events: info.GetHistoryLength(),
		Status: info.GetStatus(), Type: info.GetType().GetName()}
	it := c.GetWorkflowHistory(ctx, workflowID, "", false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			return WorkflowCost{}, fmt.Errorf("history of %s: %w", workflowID, err)
		}
		if e.GetEventType() == enums.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES {
			cost.Upserts++
		}
	}
	return cost, nil
}

// SummarizeCosts folds several workflows of one path into a PathCost.
func SummarizeCosts(server, path, status string, costs []WorkflowCost) PathCost {
	pc := PathCost{Server: server, Path: path, Status: status, Workflows: len(costs)}
	if len(costs) == 0 {
		return pc
	}
	tr := make([]int64, len(costs))
	ev := make([]int64, len(costs))
	up := make([]int64, len(costs))
	for i, c := range costs {
		tr[i], ev[i], up[i] = c.Transitions, c.Events, c.Upserts
	}
	pc.WorkflowType = costs[0].Type
	slices.Sort(tr)
	slices.Sort(ev)
	slices.Sort(up)
	pc.Upserts, pc.UpsertsMin, pc.UpsertsMax = up[(len(up)-1)/2], up[0], up[len(up)-1]
	// The lower middle for an even count: a count of writes, not a mean.
	pc.Transitions, pc.TransitionsMin, pc.TransitionsMax = tr[(len(tr)-1)/2], tr[0], tr[len(tr)-1]
	pc.Events, pc.EventsMin, pc.EventsMax = ev[(len(ev)-1)/2], ev[0], ev[len(ev)-1]
	return pc
}

// PathsOptions says where OrderPaths places its orders.
type PathsOptions struct {
	Server string
	// SKU has stock for every order; SoldOutSKU has none (its orders are
	// rejected by the workflow, past the edge).
	SKU, SoldOutSKU string
	Amount          int64
	Run             string
	// PerPath orders of each kind; ExpireAfter is the expired orders'
	// payment timeout.
	PerPath     int
	ExpireAfter time.Duration
	Queue       string
}

// OrderPaths drives PerPath orders down each path (paid, expired,
// cancelled, rejected) and as many ceiling workflows, waits for all of
// them to close and reads their cost. Whatever the order workflow does,
// this measures it: it only places, pays and cancels through the same
// service the API uses.
func OrderPaths(ctx context.Context, svc *orders.Service, o PathsOptions) ([]PathCost, error) {
	ctx, cancel := context.WithTimeout(ctx, o.ExpireAfter+3*time.Minute)
	defer cancel()
	type result struct {
		cost   WorkflowCost
		status string
		err    error
	}
	paths := []string{PathPaid, PathExpired, PathCancelled, PathRejected, PathCeiling}
	results := make(map[string][]result, len(paths))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, path := range paths {
		for i := range o.PerPath {
			wg.Go(func() {
				status, id, err := drivePath(ctx, svc, o, path, i)
				r := result{status: status, err: err}
				if err == nil {
					r.cost, r.err = DescribeCost(ctx, svc.Temporal, id)
				}
				mu.Lock()
				results[path] = append(results[path], r)
				mu.Unlock()
			})
		}
	}
	wg.Wait()
	out := make([]PathCost, 0, len(paths))
	for _, path := range paths {
		var costs []WorkflowCost
		status := ""
		for _, r := range results[path] {
			if r.err != nil {
				return nil, fmt.Errorf("%s path: %w", path, r.err)
			}
			costs = append(costs, r.cost)
			status = r.status
		}
		if path == PathCeiling && len(costs) > 0 {
			status = costs[0].Status.String()
		}
		out = append(out, SummarizeCosts(o.Server, path, status, costs))
	}
	return out, nil
}

// drivePath takes one order down a path and returns its status and its
// workflow id.
func drivePath(ctx context.Context, svc *orders.Service, o PathsOptions, path string, i int) (string, string, error) {
	id := fmt.Sprintf("path-%s-%s-%d", o.Run, path, i)
	if path == PathCeiling {
		s := Ceiling(ctx, svc.Temporal, o.Queue, fmt.Sprintf("path-%s-%d", o.Run, i), 1, 1)
		if s.Errors > 0 {
			return "", "", fmt.Errorf("ceiling: %s", s.FirstError)
		}
		return "", fmt.Sprintf("ceiling-path-%s-%d-0", o.Run, i), nil
	}
	in := workflows.OrderInput{OrderID: id, UserID: id, Items: []flashsale.Item{{SKU: o.SKU, Quantity: 1}}}
	if path == PathRejected {
		in.Items[0].SKU = o.SoldOutSKU
	}
	if path == PathExpired {
		in.PaymentTimeout = o.ExpireAfter
	}
	res, err := svc.Place(ctx, in)
	if err != nil {
		return "", "", fmt.Errorf("place %s: %w", id, err)
	}
	want := flashsale.StatusPendingPayment
	if path == PathRejected {
		want = flashsale.StatusRejected
	}
	if res.Status != want {
		return "", "", fmt.Errorf("place %s: %s %s, want %s", id, res.Status, res.Reason, want)
	}
	final := want
	switch path {
	case PathPaid:
		out, err := svc.Pay(ctx, id, workflows.Payment{TransactionID: "t-" + id, Amount: o.Amount})
		if err != nil {
			return "", "", fmt.Errorf("pay %s: %w", id, err)
		}
		final = out.Status
	case PathCancelled:
		v, err := svc.Cancel(ctx, id)
		if err != nil {
			return "", "", fmt.Errorf("cancel %s: %w", id, err)
		}
		final = v.Status
	case PathExpired:
		final = flashsale.StatusExpired
	}
	return string(final), workflows.OrderWorkflowID(id), nil
}
