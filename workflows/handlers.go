package workflows

import (
	"errors"
	"fmt"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/flashsale/flashsale"
)

// registerHandlers registers the status query, the reserve and pay updates
// and the payment and cancel signals, before the first step runs, so none
// arriving with the start is lost.
func (o *order) registerHandlers(ctx workflow.Context) error {
	if err := workflow.SetQueryHandler(ctx, QueryStatus, func() (OrderView, error) {
		return o.view, nil
	}); err != nil {
		return fmt.Errorf("register %s query: %w", QueryStatus, err)
	}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, UpdateReserve, o.handleReserve,
		workflow.UpdateHandlerOptions{Validator: o.validateReserve}); err != nil {
		return fmt.Errorf("register %s update: %w", UpdateReserve, err)
	}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, UpdatePay, o.handlePay,
		workflow.UpdateHandlerOptions{Validator: validatePayment}); err != nil {
		return fmt.Errorf("register %s update: %w", UpdatePay, err)
	}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, UpdateExtendHold, o.handleExtend,
		workflow.UpdateHandlerOptions{Validator: o.validateExtend}); err != nil {
		return fmt.Errorf("register %s update: %w", UpdateExtendHold, err)
	}
	// Signals are collected by a workflow coroutine (deterministic, unlike a
	// goroutine) into the same queue the pay update uses, so both forms of
	// payment are handled by one code path in arrival order.
	workflow.Go(ctx, func(ctx workflow.Context) {
		payments := workflow.GetSignalChannel(ctx, SignalPayment)
		cancels := workflow.GetSignalChannel(ctx, SignalCancel)
		failures := workflow.GetSignalChannel(ctx, SignalPaymentFailed)
		for {
			sel := workflow.NewSelector(ctx)
			sel.AddReceive(payments, func(c workflow.ReceiveChannel, _ bool) {
				var p Payment
				c.Receive(ctx, &p)
				if err := validatePayment(ctx, p); err != nil {
					o.logger.Warn("ignoring invalid payment signal", "error", err)
					return
				}
				o.pending = append(o.pending, p)
			})
			sel.AddReceive(cancels, func(c workflow.ReceiveChannel, _ bool) {
				var r CancelRequest
				c.Receive(ctx, &r)
				o.cancelRequested = true
			})
			sel.AddReceive(failures, func(c workflow.ReceiveChannel, _ bool) {
				var f PaymentFailure
				c.Receive(ctx, &f)
				o.logger.Info("payment failed at the provider", "transaction_id", f.TransactionID)
				o.paymentFailed = true
			})
			sel.Select(ctx)
		}
	})
	return nil
}

func validatePayment(_ workflow.Context, p Payment) error {
	// Length only, as the recorded signals were judged: a stricter rule
	// would drop, on replay, a payment signal an order once applied.
	if p.TransactionID == "" || len(p.TransactionID) > flashsale.MaxTransactionIDLength {
		return fmt.Errorf("transaction_id must be 1-%d characters", flashsale.MaxTransactionIDLength)
	}
	if p.Amount <= 0 {
		return errors.New("amount must be positive")
	}
	return nil
}

// ErrTypeOrderOfAnotherUser is the application error type of the
// validator's refusal of UpdateReserve from a user other than the order's
// buyer (an order id reused by someone else).
const ErrTypeOrderOfAnotherUser = "OrderOfAnotherUser"

// validateReserve refuses a reserve from another user before it is written
// to history.
func (o *order) validateReserve(_ workflow.Context, r ReserveRequest) error {
	if r.UserID != "" && r.UserID != o.in.UserID {
		return temporal.NewNonRetryableApplicationError("order id belongs to another user", ErrTypeOrderOfAnotherUser, nil)
	}
	return nil
}

// handleReserve answers once the reservation step is done. Repeated calls
// (a buyer clicking twice with the same order id) get the same answer.
func (o *order) handleReserve(ctx workflow.Context, _ ReserveRequest) (Reservation, error) {
	if err := workflow.Await(ctx, func() bool { return o.reserved }); err != nil {
		return Reservation{}, err
	}
	return Reservation{
		OrderID: o.view.OrderID, Status: o.reservationStatus(), Amount: o.view.Amount,
		PayBy: o.view.PayBy, Reason: o.reservationReason(),
	}, nil
}

// reservationStatus is what the reservation achieved, independent of what
// happened to the order later: an order that was reserved and then expired
// was still reserved.
func (o *order) reservationStatus() flashsale.Status {
	if o.view.Status == flashsale.StatusRejected {
		return flashsale.StatusRejected
	}
	return flashsale.StatusPendingPayment
}

func (o *order) reservationReason() flashsale.Code {
	if o.view.Status == flashsale.StatusRejected {
		return o.view.Reason
	}
	return ""
}

// handlePay queues a payment and waits until the main loop has handled it.
func (o *order) handlePay(ctx workflow.Context, p Payment) (PaymentOutcome, error) {
	if out, ok := o.outcomes[p.TransactionID]; ok {
		out.Duplicate = true
		return out, nil
	}
	o.pending = append(o.pending, p)
	if err := workflow.Await(ctx, func() bool { _, ok := o.outcomes[p.TransactionID]; return ok }); err != nil {
		return PaymentOutcome{}, err
	}
	return o.outcomes[p.TransactionID], nil
}
