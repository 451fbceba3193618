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
	"go.temporal.io/sdk/temporal"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/activities/contract"
	"github.com/flashsale/flashsale/internal/orderdb"
	"github.com/flashsale/flashsale/internal/orders"
	"github.com/flashsale/flashsale/internal/sale"
	"github.com/flashsale/flashsale/workflows"
)

// Sales are the operators' controls of a SKU's fair sale
// (docs/design/fair-sale.md), shared by the admin API and `starter sale`:
// each is SaleWorkflow's Update, answered with the sale as it stands.
type Sales struct {
	// DB knows which SKUs exist.
	DB        *orderdb.Store
	Temporal  client.Client
	TaskQueue string
}

// SaleActions are the controls Control accepts, each an Update's name.
var SaleActions = []string{workflows.UpdateSaleOpen, workflows.UpdateSalePause, workflows.UpdateSaleResume,
	workflows.UpdateSaleClose, workflows.UpdateSaleVoid}

// Start starts a SKU's sale on its terms, opening at in.OpensAt (a zero
// PassTTL or MaxEntrants: the default; a zero ClosesAt: no end, the sale
// is closed by hand), and answers it once its pre-queue is open with the
// seed's commitment published. UnknownSKU for a SKU not defined;
// SaleStateConflict while another sale of the SKU runs (close it first),
// or after one ended until the SKU is preheated (its stock left Redis at
// the end).
func (s Sales) Start(ctx context.Context, in workflows.SaleInput) (workflows.SaleView, error) {
	sku := in.SKU
	// A SKU defined before ids lost ':' sells on, but gets no sale: the
	// end of a sale removes keys by the SKU's name (flashsale.ValidSKUID).
	if err := flashsale.CheckSKUID(sku); err != nil {
		return workflows.SaleView{}, err
	}
	if in.OpensAt.IsZero() || in.PassTTL < 0 || in.MaxEntrants < 0 {
		return workflows.SaleView{}, flashsale.Errorf(flashsale.Invalid, "opens_at is required; pass_ttl and max_entrants must not be negative")
	}
	if !in.ClosesAt.IsZero() && !in.ClosesAt.After(in.OpensAt) {
		return workflows.SaleView{}, flashsale.Errorf(flashsale.Invalid, "closes_at must be after opens_at")
	}
	if _, err := s.notEnded(ctx, sku); err != nil {
		return workflows.SaleView{}, err
	}
	// Every API instance, a new one while Redis does not answer included,
	// must know from now on that the SKU's buys need a pass.
	if err := s.DB.MarkQueued(ctx, sku); err != nil {
		return workflows.SaleView{}, err
	}
	in.Unqueued, in.Since = false, time.Time{}
	return s.start(ctx, in, func(v workflows.SaleView) bool { return v.SeedHash != "" })
}

// Close ends the selling of sku, sold without a queue, as a fair sale's
// close ends it (POST /api/v1/admin/skus/{sku}/close, `starter sku close`):
// a SaleWorkflow started closed refuses every buy from its first step,
// waits for the SKU's last orders to settle, checks MySQL and Redis agree,
// reports the orders since the SKU's last PUT and removes its Redis keys.
// It answers once buys are refused; GET the sale for its report.
// SaleStateConflict while a fair sale of the SKU runs (close that) or
// after the SKU's selling ended (preheat it to sell again).
func (s Sales) Close(ctx context.Context, sku string) (workflows.SaleView, error) {
	if err := flashsale.CheckSKUID(sku); err != nil {
		return workflows.SaleView{}, err
	}
	if _, err := s.notEnded(ctx, sku); err != nil {
		return workflows.SaleView{}, err
	}
	since, err := s.DB.SaleStartedAt(ctx, sku)
	if err != nil {
		return workflows.SaleView{}, err
	}
	in := workflows.SaleInput{SKU: sku, OpensAt: time.Now(), Unqueued: true, Since: since}
	return s.start(ctx, in, func(v workflows.SaleView) bool { return v.State == sale.Closed })
}

// notEnded is sku's inventory, SaleStateConflict when its last sale ended
// and its stock left Redis.
func (s Sales) notEnded(ctx context.Context, sku string) (orderdb.Inventory, error) {
	inv, err := s.DB.Inventory(ctx, sku)
	if err != nil {
		return inv, err
	}
	if inv.SaleEndedAt != nil {
		return inv, flashsale.Errorf(flashsale.SaleStateConflict,
			"the last sale of %s ended and its stock left Redis: preheat the sku (or PUT it) before another sale", sku)
	}
	return inv, nil
}

// commitmentWait bounds how long start waits for the sale's first steps
// (the seed's commitment published, or an unqueued SKU's close).
const commitmentWait = 10 * time.Second

// start starts the SaleWorkflow of in and answers its view once ready
// says so.
func (s Sales) start(ctx context.Context, in workflows.SaleInput, ready func(workflows.SaleView) bool) (workflows.SaleView, error) {
	sku, id := in.SKU, workflows.SaleWorkflowID(in.SKU)
	_, err := s.Temporal.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID: id, TaskQueue: s.TaskQueue,
		// The sale is listed with its orders in the Web UI: SkuIds = "<sku>"
		// finds both.
		TypedSearchAttributes: temporal.NewSearchAttributes(workflows.SKUIDsKey.ValueSet([]string{sku})),
		// A closed sale's id may start again; a running one may not.
		WorkflowIDReusePolicy:    enums.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		WorkflowIDConflictPolicy: enums.WORKFLOW_ID_CONFLICT_POLICY_FAIL,
		// Without it the SDK answers the running sale as if it started.
		WorkflowExecutionErrorWhenAlreadyStarted: true,
	}, workflows.SaleWorkflow, in)
	if _, ok := errors.AsType[*serviceerror.WorkflowExecutionAlreadyStarted](err); ok {
		return workflows.SaleView{}, flashsale.Errorf(flashsale.SaleStateConflict, "a sale of %s is running; close it first", sku)
	}
	if err != nil {
		return workflows.SaleView{}, orders.CodeDown(fmt.Errorf("start %s: %w", id, err))
	}
	wait, cancel := context.WithTimeout(ctx, commitmentWait)
	defer cancel()
	for {
		v, err := s.View(wait, sku)
		if err == nil && ready(v) {
			return v, nil
		}
		select {
		case <-wait.Done():
			if err == nil {
				err = errors.New("not ready yet")
			}
			return v, orders.CodeDown(fmt.Errorf("sale %s started, not ready within %s: %w", sku, commitmentWait, err))
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// View is sku's sale as its workflow knows it (the last sale of the SKU,
// closed or not); NoSale when the SKU never had one.
func (s Sales) View(ctx context.Context, sku string) (workflows.SaleView, error) {
	res, err := s.Temporal.QueryWorkflow(ctx, workflows.SaleWorkflowID(sku), "", workflows.QuerySale)
	if err != nil {
		return workflows.SaleView{}, saleError(sku, err)
	}
	var v workflows.SaleView
	if err := res.Get(&v); err != nil {
		return workflows.SaleView{}, fmt.Errorf("decode sale view: %w", err)
	}
	return v, nil
}

// Control sends one of SaleActions to sku's sale and answers the sale
// after it: the Update's answer, written to Redis before it was given.
// SaleStateConflict when the sale's state does not allow it, NoSale when
// no sale of the SKU runs.
func (s Sales) Control(ctx context.Context, sku, action, reason string) (workflows.SaleView, error) {
	if !slices.Contains(SaleActions, action) {
		return workflows.SaleView{}, flashsale.Errorf(flashsale.Invalid, "unknown sale action %q", action)
	}
	return s.update(ctx, sku, action, workflows.SaleControl{Reason: reason})
}

// update sends Update name with arg to sku's sale and answers the sale's
// view after it, its failure coded by updateError.
func (s Sales) update(ctx context.Context, sku, name string, arg any) (workflows.SaleView, error) {
	h, err := s.Temporal.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID: workflows.SaleWorkflowID(sku), UpdateName: name,
		Args: []any{arg}, WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	var v workflows.SaleView
	if err == nil {
		err = h.Get(ctx, &v)
	}
	if err != nil {
		return workflows.SaleView{}, s.updateError(ctx, sku, err)
	}
	return v, nil
}

// updateError codes an Update's failure: a sale that ended answers no
// Update, but its last view is kept: SaleClosed.
func (s Sales) updateError(ctx context.Context, sku string, err error) error {
	err = saleError(sku, err)
	if flashsale.ErrorCode(err) == flashsale.NoSale {
		if last, verr := s.View(ctx, sku); verr == nil && last.State == sale.Closed {
			return fmt.Errorf("%w: %w", flashsale.Errorf(flashsale.SaleClosed, "the sale of %s is closed", sku), err)
		}
	}
	return err
}

// saleError codes what the sale workflow or Temporal answered.
func saleError(sku string, err error) error {
	if code, ok := contract.CodeOf(err); ok {
		// The workflow's words ("the sale is OPEN") name no internals.
		msg := "the sale's state does not allow this"
		if appErr, ok := errors.AsType[*temporal.ApplicationError](err); ok && appErr.Message() != "" {
			msg = appErr.Message()
		}
		return fmt.Errorf("sale of %s: %w: %w", sku, flashsale.Errorf(code, "%s", msg), err)
	}
	if _, ok := errors.AsType[*serviceerror.NotFound](err); ok {
		return fmt.Errorf("sale of %s: %w: %w", sku, flashsale.Errorf(flashsale.NoSale, "no sale of this sku runs"), err)
	}
	return orders.CodeDown(fmt.Errorf("sale of %s: %w", sku, err))
}

// MoveEnd sends the closes_at Update to sku's sale: its end moves to
// closesAt (later or sooner, after now and after opens_at), answered once
// every API instance refuses a buy from then on. Invalid for an end in the
// past, SaleStateConflict for a closed sale, NoSale when none runs.
func (s Sales) MoveEnd(ctx context.Context, sku string, closesAt time.Time, reason string) (workflows.SaleView, error) {
	return s.update(ctx, sku, workflows.UpdateSaleClosesAt, workflows.SaleEndChange{ClosesAt: closesAt, Reason: reason})
}
