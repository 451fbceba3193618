package workflows

import (
	"errors"
	"fmt"

	"go.temporal.io/sdk/workflow"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/activities/contract"
)

// An order of a SKU that deducts at payment (flashsale.DeductPayment):
// ReserveStock took a booking, not a unit (contract.ReserveStockResult's
// Deferred), and the order is written freezing nothing. The unit is taken
// when the payment is applied: Redis first (ReserveStock AtPayment), then
// MySQL (ConfirmPayment moves available -> sold, and decides). A payment
// that finds no unit is recorded for refund (reason SOLD_OUT) and the order
// closes CANCELLED, reason SOLD_OUT. The path is new since the first
// release: it asks its version where an order reaches it
// (docs/versioning.md).
const deductAtPaymentChangeID = "deduct-at-payment"

// soldOutAtPayment is how an order whose payment found no unit ends.
var soldOutAtPayment = outcome{status: flashsale.StatusCancelled, reason: flashsale.SoldOut}

// book continues reserve for a booked order: write it, freezing nothing.
func (o *order) book(ctx, lctx workflow.Context) error {
	workflow.GetVersion(ctx, deductAtPaymentChangeID, workflow.DefaultVersion, 1)
	o.deferred = true
	// The booking goes back (with any unit a payment took) whatever
	// happens from here.
	o.pushUndo(undoRedis, o.giveBackBooking)
	var created contract.CreateOrderResult
	err := workflow.ExecuteLocalActivity(lctx, contract.CreateOrder, contract.CreateOrderInput{
		Order:          flashsale.Order{OrderID: o.in.OrderID, UserID: o.in.UserID, Items: o.in.Items},
		PaymentTimeout: o.in.PaymentTimeout, Deferred: true,
	}).Get(lctx, &created)
	switch code := codeOf(err); code {
	case "":
		return o.opened(ctx, created)
	case flashsale.UnknownSKU, flashsale.LimitExceeded, flashsale.OrderIDConflict, flashsale.SoldOut, flashsale.Invalid:
		return o.compensate(ctx, rejection(code, err))
	default:
		o.logger.Error("create booked order failed", "error", err)
		o.pushUndo(undoDatabase, o.abandonInDatabase)
		return o.compensate(ctx, outcome{status: flashsale.StatusRejected, reason: flashsale.Unavailable, detail: "booking undone"})
	}
}

// giveBackBooking is the Redis undo of a booked order: its booking, and
// the units a payment took if it took any.
func (o *order) giveBackBooking(ctx workflow.Context, _ outcome) error {
	err := o.exec(ctx, "give the booking back", contract.ReleaseStock,
		contract.ReleaseStockInput{OrderID: o.in.OrderID, Items: o.in.Items, Deferred: true}, nil)
	if err != nil {
		return fmt.Errorf("give booking back: %w", err)
	}
	return nil
}

// takeUnits takes a booked order's units in Redis as its payment p is
// applied. It reports false when there is none: the payment was recorded
// for refund (answered), and the order must close. errNotInTime as
// execPayment's.
func (o *order) takeUnits(ctx workflow.Context, p Payment) (bool, error) {
	var res contract.ReserveStockResult
	err := o.execPayment(ctx, true, "take units for payment "+p.TransactionID, contract.ReserveStock,
		contract.ReserveStockInput{OrderID: o.in.OrderID, Items: o.in.Items, UserID: o.in.UserID, AtPayment: true}, &res)
	switch code := codeOf(err); {
	case err == nil:
		return true, nil
	case errors.Is(err, errNotInTime):
		return false, err
	case code == flashsale.SoldOut, code == flashsale.AlreadyReleased, code == flashsale.LimitExceeded:
		o.logger.Info("no unit left for the payment; recorded for refund", "transaction_id", p.TransactionID)
		o.noUnit = true
		if _, err := o.refund(ctx, true, p, flashsale.SoldOut); err != nil {
			return false, err
		}
		return false, nil
	default:
		return false, fmt.Errorf("take units for payment %s: %w", p.TransactionID, err)
	}
}
