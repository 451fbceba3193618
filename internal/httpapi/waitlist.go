package httpapi

import (
	"context"
	"net/http"

	"github.com/flashsale/flashsale/workflows"
)

// waitlistRequest is the POST /api/v1/skus/{sku}/waitlist body.
type waitlistRequest struct {
	UserID string `json:"user_id"`
}

func decodeWaitlist(body []byte) (waitlistRequest, error) {
	var req waitlistRequest
	if err := decodeJSON(body, &req); err != nil {
		return waitlistRequest{}, err
	}
	// The same rule as a buy request's user_id: the offer becomes an order
	// for this user, and its validation must not fail then.
	if err := checkID("user_id", req.UserID, workflows.MaxIDLength); err != nil {
		return waitlistRequest{}, err
	}
	return req, nil
}

// joinWaitlist is POST /api/v1/skus/{sku}/waitlist: a buyer answered
// SOLD_OUT queues for the next unit an expired or cancelled order releases;
// the unit becomes a PENDING_PAYMENT order for them (order id
// "wl-<released order id>", findable by UserId in the Web UI). 201 when
// queued now, 200 with the same place when already waiting; 409
// NOT_SOLD_OUT while units are on open sale (buy them instead); 404
// UNKNOWN_SKU.
func (s *Server) joinWaitlist(w http.ResponseWriter, r *http.Request) {
	sku, req, err := readSKURequest(w, r, decodeWaitlist)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), opTimeout)
	defer cancel()
	e, err := s.deps.Stock.JoinWaitlist(ctx, sku, req.UserID)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	status := http.StatusOK
	if e.Joined {
		status = http.StatusCreated
	}
	s.writeJSON(w, r, status, e)
}
