package orders

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"go.temporal.io/api/workflow/v1"

	"github.com/flashsale/flashsale/workflows"
)

// cancelParallel is how many cancel signals CancelRunning has in flight:
// a void of a sale of thousands of orders is bounded by round trips, not
// by the server's work per signal.
const cancelParallel = 32

// CancelRunning sends the cancel signal, with reason, to every running
// order workflow holding sku (found through the SkuIds search attribute)
// and not in signalled, page by page with cancelParallel signals in
// flight, adds each one it signalled to signalled, and returns how many it
// signalled now. An order that finished meanwhile is skipped. Each
// cancelled order compensates as a buyer's cancel does: its units go back
// (a void of a sale, SaleWorkflow). Paid orders have finished and are not
// touched. Visibility lags by about a second, so an order started just
// before the call may be missed; the caller repeats it with the same
// signalled set, which signals only the orders it has not signalled yet
// (an order still compensating stays running a while).
func (s *Service) CancelRunning(ctx context.Context, sku, reason string, signalled map[string]bool) (int, error) {
	var n int
	err := s.eachRunningOrder(ctx, sku, 1000, func(page []*workflow.WorkflowExecutionInfo) error {
		var ids []string
		for _, e := range page {
			if id := e.GetExecution().GetWorkflowId(); !signalled[id] {
				ids = append(ids, id)
			}
		}
		done, sent, err := s.signalCancel(ctx, ids, reason)
		for _, id := range done {
			signalled[id] = true
		}
		n += sent
		return err
	})
	return n, err
}

// signalCancel signals cancel to ids, cancelParallel at a time, and
// returns those it signalled or found finished, and how many it signalled.
func (s *Service) signalCancel(ctx context.Context, ids []string, reason string) ([]string, int, error) {
	var mu sync.Mutex
	var done []string
	var sent int
	var errs []error
	sem := make(chan struct{}, cancelParallel)
	var wg sync.WaitGroup
	for _, id := range ids {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			err := s.Temporal.SignalWorkflow(ctx, id, "", workflows.SignalCancel, workflows.CancelRequest{Reason: reason})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				done, sent = append(done, id), sent+1
			case isNotFound(err):
				done = append(done, id)
			default:
				errs = append(errs, temporalErr(fmt.Sprintf("cancel %s", id), err))
			}
		})
	}
	wg.Wait()
	return done, sent, errors.Join(errs...)
}
