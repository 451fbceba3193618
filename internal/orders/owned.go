package orders

import (
	"context"
	"fmt"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/workflows"
)

// Viewer is who asks for an order: a buyer, who may see only their own, or
// an operator (Any), who may see every order.
type Viewer struct {
	Buyer string
	Any   bool
	// PlacedBy names the buyer an order id was placed for, as the door
	// that placed it remembers (the edge's placed marker), "" when it does
	// not: the owner of an order MySQL has no row for, still reserving or
	// rejected. Nil: nobody remembers, and such orders are not a buyer's
	// to read.
	PlacedBy func(ctx context.Context, orderID string) (string, error)
}

func (v Viewer) owns(userID string) bool { return v.Any || (v.Buyer != "" && v.Buyer == userID) }

// Read returns the order as v may see it: OrderNotFound for an order of
// another buyer, exactly as for an id nobody has.
//
// The owner is decided first, without Temporal: from MySQL's row (one
// indexed read) and the door's placed marker (one Redis read), both read
// for every buyer's request whatever the id, so an order that is not the
// caller's costs what an unknown id costs and takes the same time. It never
// reaches Temporal's query: a query is answered by a worker, and a closed
// workflow is replayed from its whole history for it (the sale's
// bottleneck, and a timing that told unknown, open and closed ids apart).
// A closed order is answered from MySQL, which holds its final status and
// every payment, refunds included. Only the caller's own open orders, and
// their own orders with no row (RESERVING, REJECTED), are asked of their
// workflow, which has them live.
func (s *Service) Read(ctx context.Context, orderID string, v Viewer) (workflows.OrderView, error) {
	r, err := s.locate(ctx, orderID, v)
	if err != nil {
		return workflows.OrderView{}, err
	}
	if r.closedRow {
		return s.closedView(ctx, orderID)
	}
	return s.Status(ctx, orderID)
}

// CancelOwned is Cancel for a caller who must own the order: an order of
// another buyer is OrderNotFound, and one already closed (cancelled
// included) is OrderClosed, told apart from MySQL before Temporal is asked.
func (s *Service) CancelOwned(ctx context.Context, orderID string, v Viewer) (workflows.OrderView, error) {
	r, err := s.locate(ctx, orderID, v)
	if err != nil {
		return workflows.OrderView{}, err
	}
	switch {
	case r.closedRow:
		return workflows.OrderView{}, closed(orderID, r.status)
	case !r.hasRow:
		// RESERVING or REJECTED: only the workflow knows which.
		view, err := s.Status(ctx, orderID)
		if err != nil {
			return workflows.OrderView{}, err
		}
		if view.Status.Closed() {
			return view, closed(orderID, view.Status)
		}
	}
	return s.Cancel(ctx, orderID)
}

// located is where an order the viewer may see stands.
type located struct {
	hasRow    bool
	closedRow bool
	status    flashsale.Status
}

// locate decides whether v may see orderID, and where its answer is.
func (s *Service) locate(ctx context.Context, orderID string, v Viewer) (located, error) {
	if s.Orders == nil {
		return located{}, fmt.Errorf("read order %s: no order store", orderID)
	}
	head, err := s.Orders.Head(ctx, orderID)
	if err != nil && flashsale.ErrorCode(err) != flashsale.OrderNotFound {
		return located{}, fmt.Errorf("read order %s: %w", orderID, err)
	}
	found := err == nil
	if v.Any {
		// Operators see everything, rows or not: the workflow knows
		// orders MySQL never had.
		return located{hasRow: found, closedRow: found && head.Status.Closed(), status: head.Status}, nil
	}
	// Read whether or not the row was found: an answer that skipped it
	// for some ids would time apart the ids that have rows.
	placedBy := ""
	if v.PlacedBy != nil {
		if placedBy, err = v.PlacedBy(ctx, orderID); err != nil {
			// Redis down must not stop reads of orders MySQL has; one
			// without a row is nobody's until Redis answers again.
			s.logger().DebugContext(ctx, "placed marker unreadable; an order without a row reads as unknown",
				"order_id", orderID, "error", err)
			placedBy = ""
		}
	}
	switch {
	case found && v.owns(head.UserID):
		return located{hasRow: true, closedRow: head.Status.Closed(), status: head.Status}, nil
	case !found && v.owns(placedBy):
		return located{}, nil
	}
	return located{}, notFound(orderID)
}

// closedView is a closed order from MySQL: its final status and every
// payment recorded for it, refunds included.
func (s *Service) closedView(ctx context.Context, orderID string) (workflows.OrderView, error) {
	o, err := s.Orders.Order(ctx, orderID)
	if err != nil {
		return workflows.OrderView{}, fmt.Errorf("read order %s: %w", orderID, err)
	}
	view := viewOf(o)
	// The unit price is MySQL's bookkeeping; a buyer's order reads the
	// same closed as it did open, from its workflow.
	for i := range view.Items {
		view.Items[i].UnitPrice = 0
	}
	return view, nil
}
