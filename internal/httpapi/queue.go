package httpapi

import (
	"context"
	"net/http"
	"time"

	"github.com/flashsale/flashsale/internal/edge"
	"github.com/flashsale/flashsale/internal/sale"
)

// A fair sale's queue (docs/design/fair-sale.md): buyers enter before the
// open and read their place and pass; each is one Lua script in the SKU's
// slot (internal/sale), never the sale's workflow.

// enterQueue is POST /api/v1/skus/{sku}/queue: the buyer (the token's
// subject) enters the sale's queue, once. 201 when entered now, 200 with
// the same ticket when already in; before the open the ticket is the
// order of entry (the shuffle decides the rank), after it the rank is the
// next after everyone ranked. 404 NO_SALE for a SKU without a sale, 409
// SALE_CLOSED once it is over, 429 RATE_LIMITED like buys.
func (s *Server) enterQueue(w http.ResponseWriter, r *http.Request) {
	c, sku, ctx, cancel, err := s.queueRequest(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	defer cancel()
	// No body is read: the buyer is the token's.
	t, err := s.sales.Store().Enter(ctx, sku, c.buyer)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	status := http.StatusOK
	if t.Entered {
		status = http.StatusCreated
	}
	s.writeJSON(w, r, status, t)
}

// queueRequest authenticates a buyer's queue request, reads the SKU and
// spends one of the buyer's queue requests.
func (s *Server) queueRequest(r *http.Request) (caller, string, context.Context, context.CancelFunc, error) {
	c, err := s.authenticate(r, false)
	if err != nil {
		return caller{}, "", nil, nil, err
	}
	sku, err := skuParam(r)
	if err != nil {
		return caller{}, "", nil, nil, err
	}
	ctx, cancel := context.WithTimeout(r.Context(), opTimeout)
	if err := s.gate.RateLimit(ctx, edge.ScopeQueue, c.buyer); err != nil {
		cancel()
		return caller{}, "", nil, nil, err
	}
	return c, sku, ctx, cancel, nil
}

// queuePlaceResponse is GET /api/v1/skus/{sku}/queue/me.
type queuePlaceResponse struct {
	sale.Place
	// Pass is the buyer's pass while it may be spent: send it as the
	// Sale-Pass header of POST /api/v1/orders before PassExpiresAt.
	Pass          string    `json:"pass,omitempty"`
	PassExpiresAt time.Time `json:"pass_expires_at,omitzero"`
}

// queuePlace is GET /api/v1/skus/{sku}/queue/me: the buyer's ticket, rank,
// how many ranks are ahead, the serving counter and, once their turn came,
// their pass. Reading it moves the serving counter on. 404 NO_SALE or
// NOT_IN_QUEUE.
func (s *Server) queuePlace(w http.ResponseWriter, r *http.Request) {
	c, sku, ctx, cancel, err := s.queueRequest(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	defer cancel()
	p, err := s.sales.Store().PlaceOf(ctx, sku, c.buyer)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, r, http.StatusOK, queuePlaceResponse{Place: p, Pass: s.sales.Issue(p), PassExpiresAt: p.PassExpiry})
}
