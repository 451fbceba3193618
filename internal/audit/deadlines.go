package audit

// Orders still open well past their deadline, in MySQL and in Temporal.

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/flashsale/flashsale/internal/orders"
	"github.com/flashsale/flashsale/workflows"
)

// checkDeadlines finds orders still open well past their deadline, in
// MySQL (still PENDING_PAYMENT) and in Temporal (workflow still running).
// It returns how many order workflows of the SKU are running.
func (c *checker) checkDeadlines(ctx context.Context, sku string) (int, error) {
	now := c.now()
	overdue, err := c.deps.Orders.OverdueOrders(ctx, sku, now.Add(-c.grace))
	if err != nil {
		return 0, err
	}
	for _, o := range overdue {
		c.add(Violation{SKU: sku, OrderID: o.OrderID, Kind: KindOrderOverdue,
			Expected: "closed by " + o.PayBy.Add(c.grace).Format(time.RFC3339), Actual: string(o.Status),
			Detail: fmt.Sprintf("pay_by %s passed %s ago; the order still holds its units frozen",
				o.PayBy.Format(time.RFC3339), now.Sub(o.PayBy).Round(time.Second))})
	}

	open, err := c.openOrderWorkflows(ctx, sku)
	if err != nil {
		return 0, err
	}
	ids := make([]string, 0, len(open))
	for id := range open {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	deadlines, err := c.deps.Orders.Deadlines(ctx, ids)
	if err != nil {
		return 0, err
	}
	for _, id := range ids {
		closeBy := open[id].Add(reserveBudget + c.grace)
		what := "no order row: still reserving"
		if d, ok := deadlines[id]; ok {
			closeBy = d.PayBy.Add(c.grace)
			what = fmt.Sprintf("order %s, pay_by %s", d.Status, d.PayBy.Format(time.RFC3339))
		}
		if now.Before(closeBy) {
			continue
		}
		c.add(Violation{SKU: sku, OrderID: id, Kind: KindWorkflowOverdue,
			Expected: "closed by " + closeBy.Format(time.RFC3339), Actual: "Running",
			Detail: fmt.Sprintf("workflow %s still running (%s)", workflows.OrderWorkflowID(id), what)})
	}
	return len(open), nil
}

// openOrderWorkflows lists the running order workflows holding sku, by
// order id, with their start times (orders.Service.RunningOrders).
// Visibility lags by a moment, which only matters for workflows far
// younger than any deadline.
func (c *checker) openOrderWorkflows(ctx context.Context, sku string) (map[string]time.Time, error) {
	open, err := (&orders.Service{Temporal: c.deps.Temporal, Orders: c.deps.Orders}).RunningOrders(ctx, sku)
	if err != nil {
		return nil, fmt.Errorf("list open order workflows: %w", err)
	}
	return open, nil
}
