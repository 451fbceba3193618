package httpapi

import (
	"context"
	"net/http"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/internal/orders"
)

// refundRequest is the POST /api/v1/admin/orders/{id}/refund body.
type refundRequest struct {
	Restock *bool  `json:"restock"`
	Reason  string `json:"reason,omitempty"`
}

// refundResponse answers it: the first refund's result, to every retry.
type refundResponse struct {
	OrderID   string           `json:"order_id"`
	Status    flashsale.Status `json:"status"`
	Amount    int64            `json:"amount"`
	Refunded  bool             `json:"refunded"`
	Restocked bool             `json:"restocked"`
	OnSale    bool             `json:"on_sale"`
}

// refundedRequest is the POST /api/v1/admin/payments/{transaction_id}/refunded
// body: the provider's id of the refund, kept with the payment.
type refundedRequest struct {
	RefundID string `json:"refund_id,omitempty"`
}

// paymentResponse answers it.
type paymentResponse struct {
	TransactionID string                  `json:"transaction_id"`
	OrderID       string                  `json:"order_id"`
	Amount        int64                   `json:"amount"`
	Status        flashsale.PaymentStatus `json:"status"`
}

func (s *Server) refunds() orders.Refunds {
	return orders.Refunds{Orders: s.deps.Store, Stock: s.deps.Stock}
}

// refundOrder is POST /api/v1/admin/orders/{id}/refund (orders.Refunds.Refund).
func (s *Server) refundOrder() http.HandlerFunc {
	return s.idEndpoint("id", "order_id", flashsale.MaxIDLength, func(ctx context.Context, id string, body []byte) (any, error) {
		var req refundRequest
		if err := decodeJSON(body, &req); err != nil {
			return nil, err
		}
		if req.Restock == nil {
			return nil, invalid("restock is required: true puts the units back on sale, false writes them off")
		}
		if len(req.Reason) > flashsale.MaxReasonLength {
			return nil, invalid("reason is too long")
		}
		res, err := s.refunds().Refund(ctx, id, req.Reason, *req.Restock)
		if err != nil {
			return nil, err
		}
		o := res.Order
		return refundResponse{OrderID: o.OrderID, Status: o.Status, Amount: o.Amount,
			Refunded: res.Refunded, Restocked: res.Restocked, OnSale: res.OnSale}, nil
	})
}

// markRefunded is POST /api/v1/admin/payments/{transaction_id}/refunded
// (orders.Refunds.MarkRefunded).
func (s *Server) markRefunded() http.HandlerFunc {
	return s.idEndpoint("transaction_id", "transaction_id", flashsale.MaxTransactionIDLength, func(ctx context.Context, id string, body []byte) (any, error) {
		var req refundedRequest
		if len(body) > 0 {
			if err := decodeJSON(body, &req); err != nil {
				return nil, err
			}
		}
		if len(req.RefundID) > flashsale.MaxTransactionIDLength {
			return nil, invalid("refund_id is too long")
		}
		p, err := s.refunds().MarkRefunded(ctx, id, req.RefundID)
		if err != nil {
			return nil, err
		}
		return paymentResponse{TransactionID: p.TransactionID, OrderID: p.OrderID, Amount: p.Amount, Status: p.Status}, nil
	})
}

// idEndpoint is the door of an admin endpoint addressed by one id in its
// path: the id checked, the body read (size-capped), the use case called
// within opTimeout, its answer 200 or its error through the table.
func (s *Server) idEndpoint(param, field string, maxLen int, call func(ctx context.Context, id string, body []byte) (any, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue(param)
		if err := checkID(field, id, maxLen); err != nil {
			s.writeError(w, r, err)
			return
		}
		body, err := readBody(w, r)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), opTimeout)
		defer cancel()
		out, err := call(ctx, id, body)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		s.writeJSON(w, r, http.StatusOK, out)
	}
}
