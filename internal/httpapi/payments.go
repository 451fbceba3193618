package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/workflows"
)

// paymentQueuedResponse is the 202 answer to a callback the order took as
// a signal (see orders.Service.Pay).
type paymentQueuedResponse struct {
	OrderID       string `json:"order_id"`
	TransactionID string `json:"transaction_id"`
	Payment       string `json:"payment"`
}

// paymentProcessing is paymentQueuedResponse.Payment: accepted, outcome to
// follow on the order.
const paymentProcessing = "PROCESSING"

// paymentCallback is POST /api/v1/payments/callback, the payment provider's
// webhook. The raw body is verified before it is parsed, so unsigned input
// never reaches the JSON decoder, let alone Temporal.
func (s *Server) paymentCallback(w http.ResponseWriter, r *http.Request) {
	// The order judges the payment by when it reached us, not by when its
	// workflow got to it: stamped before anything else can delay it.
	received := s.now()
	body, err := s.readSigned(w, r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	cb, err := decodeCallback(body)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), opTimeout)
	defer cancel()

	if cb.Status == CallbackFailed {
		// A failed payment moves no money: acknowledge it with what the
		// order is now. The order is told: one whose SKUs say
		// release_on_failed_payment closes and puts its units back at
		// once; any other waits for its deadline.
		view, err := s.deps.Orders.Snapshot(ctx, cb.OrderID)
		if err == nil && view.Status == flashsale.StatusPendingPayment {
			err = s.deps.Orders.PaymentFailed(ctx, cb.OrderID, cb.TransactionID)
		}
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		s.writeJSON(w, r, http.StatusOK, statusResponse{OrderID: cb.OrderID, Status: view.Status})
		return
	}

	out, err := s.deps.Orders.Pay(ctx, cb.OrderID, workflows.Payment{
		TransactionID: cb.TransactionID, Amount: cb.Amount, ReceivedAt: received,
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if out.Queued {
		// The order was too busy to answer at once; the payment is in its
		// history now, judged by the time it reached us, and will be
		// captured or recorded for refund exactly once. A 2xx, so the
		// provider does not retry; GET /api/v1/orders/{id} shows the result.
		s.writeJSON(w, r, http.StatusAccepted, paymentQueuedResponse{
			OrderID: cb.OrderID, TransactionID: cb.TransactionID, Payment: paymentProcessing,
		})
		return
	}
	if out.Conflict {
		// The transaction id already belongs to another order: nothing was
		// recorded for this one (which stays payable and still expires on
		// time), and no refund may be issued on the strength of this answer,
		// since the money is the other order's.
		s.writeError(w, r, &flashsale.Error{Code: flashsale.TransactionConflict})
		return
	}
	if out.Refund == workflows.RefundRequired && out.Reason == flashsale.AmountMismatch {
		s.writeError(w, r, &flashsale.Error{Code: flashsale.AmountMismatch})
		return
	}
	// Paid, a repeat of a handled transaction, or money that came after
	// the order closed (or for an order already paid): acknowledged with
	// 200, because a provider retries anything else for a day; the refund
	// is recorded exactly once in the payments table.
	s.writeJSON(w, r, http.StatusOK, statusResponse{OrderID: cb.OrderID, Status: out.Status, Refund: out.Refund})
}

// holdRequest is the POST /api/v1/payments/hold body, signed as a callback.
type holdRequest struct {
	OrderID  string             `json:"order_id"`
	ExtendBy flashsale.Duration `json:"extend_by"`
	Reason   string             `json:"reason,omitempty"`
}

// holdResponse answers it: the order's deadline now.
type holdResponse struct {
	OrderID      string           `json:"order_id"`
	Status       flashsale.Status `json:"status"`
	PayBy        time.Time        `json:"pay_by"`
	HoldExtended bool             `json:"hold_extended"`
}

// extendHold is POST /api/v1/payments/hold: the payment provider's buyer
// started paying, and the order's hold is extended once, by at most
// flashsale.MaxHoldExtension (orders.Service.ExtendHold). Verified before
// it is parsed, as the callback is.
func (s *Server) extendHold(w http.ResponseWriter, r *http.Request) {
	body, err := s.readSigned(w, r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var req holdRequest
	if err := decodeJSON(body, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := checkID("order_id", req.OrderID, flashsale.MaxIDLength); err != nil {
		s.writeError(w, r, err)
		return
	}
	if len(req.Reason) > flashsale.MaxReasonLength {
		s.writeError(w, r, invalid(fmt.Sprintf("reason must be at most %d characters", flashsale.MaxReasonLength)))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), opTimeout)
	defer cancel()
	view, err := s.deps.Orders.ExtendHold(ctx, req.OrderID, req.ExtendBy.D(), req.Reason)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, r, http.StatusOK, holdResponse{OrderID: view.OrderID, Status: view.Status, PayBy: view.PayBy,
		HoldExtended: view.HoldExtended})
}

// readSigned reads a payment provider's request body and verifies its
// signature before anything parses it (BadSignature otherwise), so unsigned
// input never reaches the JSON decoder: every provider route's first step.
func (s *Server) readSigned(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	body, err := readBody(w, r)
	if err != nil {
		return nil, err
	}
	if err := VerifySignature(r.Header.Get(SignatureHeader), body, s.cfg.WebhookSecrets, s.now()); err != nil {
		return nil, refuse(BadSignature, err.Error())
	}
	return body, nil
}
