package ceiling

// The limits of the order's own shape (issue 26). C0 (Workflow) has one
// client round trip and nothing else, so "whole orders at 0.41x C0" mixed
// what Temporal must do for an order with what flashsale adds. A paid
// order has two round trips (reserve, pay), local activities and a
// deadline timer; these workflows have exactly that and nothing more:
//
//   - C1 (shape): Update-with-Start whose handler runs one no-op local
//     activity and starts the deadline timer; a pay update that runs one
//     no-op local activity and cancels the timer; completion.
//   - C2 (physical): C1 whose local activities make the order's own Redis
//     calls and MySQL statements (the real ReserveStock + CreateOrder in
//     one, the real ConfirmPayment), on the bench's scratch SKU.
//
// Whole orders against C2 is what the order's features cost beyond the
// work they cannot avoid; C2 against C1 is the price of that work.

import (
	"context"
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/activities"
	"github.com/flashsale/flashsale/activities/contract"
	"github.com/flashsale/flashsale/workflows"
)

// Register registers C0 (Workflow), C1/C2 (Shape) and C2's activities,
// which do their work with acts (the worker's own, app.Activities).
func Register(r worker.Registry, acts *activities.Activities) {
	r.RegisterWorkflow(Workflow)
	r.RegisterWorkflow(Shape)
	r.RegisterActivity(&Work{Acts: acts})
}

// PayUpdate is the shape workflows' second update.
const PayUpdate = "pay"

// ShapeInput starts a C1 or C2 workflow.
type ShapeInput struct {
	OrderID string `json:"order_id"`
	UserID  string `json:"user_id"`
	SKU     string `json:"sku"`
	// Physical makes it C2: the local activities do the order's work.
	Physical bool `json:"physical,omitempty"`
	// Deadline is the payment timer's length.
	Deadline time.Duration `json:"deadline"`
	// Rung, when set, makes the workflow one rung of the ladder from C0 to
	// C1 (Rungs), to price each feature on its own.
	Rung *Rung `json:"rung,omitempty"`
}

// Rung is a step between C0 and C1: which of the order's features the
// workflow has.
type Rung struct {
	Name string `json:"name"`
	// LocalActivity runs a no-op local activity in the reserve update.
	LocalActivity bool `json:"local_activity,omitempty"`
	// Upsert sets OrderStatus=PENDING_PAYMENT from the reserve update, as
	// the order does in its first task.
	Upsert bool `json:"upsert,omitempty"`
	// Timer starts the deadline timer.
	Timer bool `json:"timer,omitempty"`
	// Pay waits for the second update (with its no-op local activity).
	Pay bool `json:"pay,omitempty"`
}

// Rungs is the ladder from C0 to C1, each adding one feature to the one
// before: the difference between two neighbours' rates is that feature's
// price.
var Rungs = []Rung{
	{Name: "C0 + 1 local activity", LocalActivity: true},
	{Name: "+ search-attribute upsert", LocalActivity: true, Upsert: true},
	{Name: "+ deadline timer", LocalActivity: true, Upsert: true, Timer: true},
	{Name: "+ second update (pay)", LocalActivity: true, Upsert: true, Timer: true, Pay: true},
}

// PayInput is the pay update's argument.
type PayInput struct {
	TransactionID string `json:"transaction_id"`
	Amount        int64  `json:"amount"`
}

// Shape is C1, or C2 with Physical: see the package comment.
func Shape(ctx workflow.Context, in ShapeInput) error {
	// Update handlers run on contexts of their own: each sets the options.
	local := func(ctx workflow.Context) workflow.Context {
		return workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
			StartToCloseTimeout: 10 * time.Second,
			RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 3},
		})
	}
	rung := Rung{LocalActivity: true, Timer: true, Pay: true} // C1, C2
	if in.Rung != nil {
		rung = *in.Rung
	}
	var w *Work
	var reserved, paid bool
	var amount int64
	cancelTimer := func() {}
	if err := workflow.SetUpdateHandler(ctx, UpdateName, func(ctx workflow.Context) (Answer, error) {
		if rung.LocalActivity {
			if err := workflow.ExecuteLocalActivity(local(ctx), w.ShapeReserve, in).Get(ctx, &amount); err != nil {
				return Answer{}, err
			}
		}
		if rung.Upsert {
			if err := workflow.UpsertTypedSearchAttributes(ctx, workflows.OrderStatusKey.ValueSet(string(flashsale.StatusPendingPayment))); err != nil {
				return Answer{}, err
			}
		}
		if rung.Timer {
			tctx, cancel := workflow.WithCancel(ctx)
			cancelTimer = cancel
			workflow.NewTimer(tctx, in.Deadline)
		}
		reserved = true
		if !rung.Pay {
			paid = true
		}
		return Answer{OrderID: in.OrderID}, nil
	}); err != nil {
		return err
	}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, PayUpdate, func(ctx workflow.Context, p PayInput) (Answer, error) {
		if err := workflow.ExecuteLocalActivity(local(ctx), w.ShapePay, in, p).Get(ctx, nil); err != nil {
			return Answer{}, err
		}
		cancelTimer()
		paid = true
		return Answer{OrderID: in.OrderID}, nil
	}, workflow.UpdateHandlerOptions{Validator: func(p PayInput) error {
		if !reserved {
			return fmt.Errorf("order %s: not reserved", in.OrderID)
		}
		return nil
	}}); err != nil {
		return err
	}
	return workflow.Await(ctx, func() bool { return paid && workflow.AllHandlersFinished(ctx) })
}

// Work is the shape workflows' local activities. With Acts nil (or for C1)
// they do nothing.
type Work struct {
	Acts *activities.Activities
}

// ShapeReserve is C1's no-op or C2's reservation: the order's ReserveStock
// and CreateOrder in one local activity. It answers the order's amount.
func (w *Work) ShapeReserve(ctx context.Context, in ShapeInput) (int64, error) {
	if !in.Physical {
		return 0, nil
	}
	items := []flashsale.Item{{SKU: in.SKU, Quantity: 1}}
	r, err := w.Acts.ReserveStock(ctx, contract.ReserveStockInput{OrderID: in.OrderID, UserID: in.UserID, Items: items})
	if err != nil {
		return 0, err
	}
	c, err := w.Acts.CreateOrder(ctx, contract.CreateOrderInput{
		Order: flashsale.Order{OrderID: in.OrderID, UserID: in.UserID, Items: items}, Degraded: r.Degraded})
	if err != nil {
		return 0, err
	}
	return c.Amount, nil
}

// ShapePay is C1's no-op or C2's ConfirmPayment.
func (w *Work) ShapePay(ctx context.Context, in ShapeInput, p PayInput) error {
	if !in.Physical {
		return nil
	}
	_, err := w.Acts.ConfirmPayment(ctx, contract.ConfirmPaymentInput{OrderID: in.OrderID, TransactionID: p.TransactionID, Amount: p.Amount})
	return err
}
