package httpapi

import (
	"context"
	"net/http"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/internal/edge"
	"github.com/flashsale/flashsale/internal/orderdb"
	"github.com/flashsale/flashsale/internal/sale"
)

// waitlistRequest is the POST /api/v1/skus/{sku}/waitlist body. It may be
// empty: the buyer is the token's subject, and user_id, if sent, must be
// the same.
type waitlistRequest struct {
	UserID string `json:"user_id"`
}

func decodeWaitlist(body []byte) (waitlistRequest, error) {
	var req waitlistRequest
	if len(body) == 0 {
		return req, nil
	}
	if err := decodeJSON(body, &req); err != nil {
		return waitlistRequest{}, err
	}
	return req, nil
}

// joinWaitlist is POST /api/v1/skus/{sku}/waitlist: a buyer answered
// SOLD_OUT queues for the next unit an expired or cancelled order releases;
// the unit becomes a PENDING_PAYMENT order for them (GET .../waitlist/me
// names it). 201 when queued now, 200 with the same place when already
// waiting (one place per buyer); 409 NOT_SOLD_OUT while units are on open
// sale (buy them instead); 409 WAITLIST_FULL past WaitlistPerUnit places
// per unit of stock; 422 LIMIT_EXCEEDED when the buyer already holds as
// many units as one buyer may; 429 RATE_LIMITED like buys; 404 UNKNOWN_SKU.
// A fair sale's waitlist is its queue's buyers in rank order (saleRank).
func (s *Server) joinWaitlist(w http.ResponseWriter, r *http.Request) {
	c, err := s.authenticate(r, false)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	sku, req, err := readSKURequest(w, r, decodeWaitlist)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := c.claimedUser(req.UserID); err != nil {
		s.writeError(w, r, err)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), opTimeout)
	defer cancel()
	if err := s.gate.RateLimit(ctx, edge.ScopeWaitlist, c.buyer); err != nil {
		s.writeError(w, r, err)
		return
	}
	// A buyer who already holds the limit could only be offered a unit
	// MySQL then refuses: standing first, they would turn every released
	// unit away from the buyers behind them. The same read of the SKU's row
	// sizes the line (an unknown SKU stays UnknownSKU: 404).
	inv, err := s.deps.Store.CheckUserLimit(ctx, c.buyer, sku, 1)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	capacity := waitlistCapacity(s.cfg.WaitlistPerUnit, inv)
	rank, err := s.saleRank(ctx, sku, c.buyer)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	e, err := s.deps.Stock.JoinWaitlistRanked(ctx, sku, c.buyer, rank, capacity)
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

// saleRank is the buyer's rank in the SKU's fair sale, which orders its
// waitlist (0 for a SKU without a sale: the FIFO list). A sale's waitlist
// is for its queue's buyers (NotInQueue for anyone else; one ranked after
// the open is ranked by then) and closes with the sale (SaleClosed).
func (s *Server) saleRank(ctx context.Context, sku, buyer string) (int64, error) {
	rank, st, err := s.sales.Store().RankOf(ctx, sku, buyer)
	switch {
	case flashsale.ErrorCode(err) == flashsale.NoSale:
		return 0, nil
	case err != nil:
		return 0, err
	case st == sale.Closed:
		return 0, sale.StateError(sku, st)
	case rank == 0:
		// Entered, not ranked yet: the sale has not opened, so it cannot
		// be sold out; the waitlist says so (NotSoldOut).
		return 0, flashsale.Errorf(flashsale.NotSoldOut, "the sale of %s has not opened yet", sku)
	}
	return rank, nil
}

// waitlistCapacity is how many buyers may wait for a SKU: perUnit per
// unit of the sale's stock (at least perUnit, so a sale of a few units
// still has a line).
func waitlistCapacity(perUnit int64, inv orderdb.Inventory) int64 {
	return perUnit * max(inv.Total, 1)
}

// waitlistPlaceResponse is GET /api/v1/skus/{sku}/waitlist/me: the buyer's
// position while waiting, or the order offered to them.
type waitlistPlaceResponse struct {
	SKU      string `json:"sku_id"`
	UserID   string `json:"user_id"`
	Position int64  `json:"position,omitempty"`
	// OfferOrderID is the order a released unit became for this buyer: pay
	// it (or read it with GET /api/v1/orders/{id}) before its pay_by.
	OfferOrderID string `json:"offer_order_id,omitempty"`
}

// waitlistPlace is GET /api/v1/skus/{sku}/waitlist/me. 404 NOT_ON_WAITLIST
// when the buyer neither waits nor was offered a unit.
func (s *Server) waitlistPlace(w http.ResponseWriter, r *http.Request) {
	c, err := s.authenticate(r, false)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	sku, err := skuParam(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), opTimeout)
	defer cancel()
	p, err := s.deps.Stock.WaitlistPlace(ctx, sku, c.buyer)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := waitlistPlaceResponse{SKU: sku, UserID: c.buyer, Position: p.Position}
	if p.OfferedFrom != "" {
		out.OfferOrderID = flashsale.WaitlistOrderID(p.OfferedFrom)
	}
	s.writeJSON(w, r, http.StatusOK, out)
}
