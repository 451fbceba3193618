package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
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

// MaxQueueWait is the longest a look at the queue may be held (?wait=):
// well inside the server's write timeout, and short enough that a buyer's
// client sees a dead connection before long.
const MaxQueueWait = 10 * time.Second

// queuePlace is GET /api/v1/skus/{sku}/queue/me: the buyer's ticket, rank,
// how many ranks are ahead, the serving counter and, once their turn came,
// their pass. Reading it moves the serving counter on. With ?wait=N (whole
// seconds, at most MaxQueueWait) a buyer still waiting for their turn is
// answered when it comes, when the SKU sells out or the sale leaves OPEN,
// or after N seconds, whichever is first (sale.Waits): a long poll. 404
// NO_SALE or NOT_IN_QUEUE.
func (s *Server) queuePlace(w http.ResponseWriter, r *http.Request) {
	wait, err := waitParam(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
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
	if wait > 0 && sale.Waiting(p) {
		p, err = s.waitForTurn(r.Context(), p, wait)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
	}
	s.writeJSON(w, r, http.StatusOK, queuePlaceResponse{Place: p, Pass: s.sales.Issue(p), PassExpiresAt: p.PassExpiry})
}

// waitForTurn holds a waiting buyer's look (queuePlace's ?wait=) and
// answers their place after it. A sell-out is answered from the counter
// that saw it, without a look of each waiter's own: at that moment every
// waiter of the SKU is woken at once, and their answer is the same.
func (s *Server) waitForTurn(ctx context.Context, p sale.Place, wait time.Duration) (sale.Place, error) {
	if c, woken := s.waits.Wait(ctx, p.SKU, p.Rank, wait); woken && c.SoldOut {
		return p.SoldOutAt(c), nil
	}
	look, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	return s.sales.Store().PlaceOf(look, p.SKU, p.UserID)
}

// waitParam reads queue/me's ?wait=, whole seconds from 0 to
// MaxQueueWait; absent is 0 (answer at once).
func waitParam(r *http.Request) (time.Duration, error) {
	v := r.URL.Query().Get("wait")
	if v == "" {
		return 0, nil
	}
	// Bounded before it is multiplied: 18446744074 seconds in nanoseconds
	// wraps around to a third of a second, and the largest int64 to -1 s.
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 || int64(n) > int64(MaxQueueWait/time.Second) {
		return 0, invalid(fmt.Sprintf("wait must be whole seconds from 0 to %d", int(MaxQueueWait/time.Second)))
	}
	return time.Duration(n) * time.Second, nil
}
