package httpapi

import (
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// A fair sale's queue (docs/design/fair-sale.md): buyers enter before the
// open and read their place and pass; the use cases are internal/queueing,
// one call per route.

// enterQueue is POST /api/v1/skus/{sku}/queue: the buyer (the token's
// subject) enters the sale's queue, once. 201 when entered now, 200 with
// the same ticket when already in; before the open the ticket is the
// order of entry (the shuffle decides the rank), after it the rank is the
// next after everyone ranked. 404 NO_SALE for a SKU without a sale, 409
// SALE_CLOSED once it is over, 429 RATE_LIMITED like buys.
func (s *Server) enterQueue(w http.ResponseWriter, r *http.Request) {
	buyer, sku, err := s.queueRequest(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	// No body is read: the buyer is the token's.
	t, err := s.queueing.Enter(r.Context(), buyer, sku)
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

// queueRequest authenticates a buyer's queue request and reads the SKU.
func (s *Server) queueRequest(r *http.Request) (buyer, sku string, err error) {
	c, err := s.authenticate(r, false)
	if err != nil {
		return "", "", err
	}
	if sku, err = skuParam(r); err != nil {
		return "", "", err
	}
	return c.buyer, sku, nil
}

// MaxQueueWait is the longest a look at the queue may be held (?wait=):
// well inside the server's write timeout, and short enough that a buyer's
// client sees a dead connection before long.
const MaxQueueWait = 10 * time.Second

// queuePlace is GET /api/v1/skus/{sku}/queue/me: the buyer's ticket, rank,
// how many ranks are ahead, the serving counter and, once their turn came,
// their pass (queueing.Service.Me). Reading it moves the serving counter
// on. With ?wait=N (whole seconds, at most MaxQueueWait) a buyer still
// waiting for their turn is answered when it comes, when the SKU sells out
// or the sale leaves OPEN, or after N seconds, whichever is first: a long
// poll. 404 NO_SALE or NOT_IN_QUEUE.
func (s *Server) queuePlace(w http.ResponseWriter, r *http.Request) {
	wait, err := waitParam(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	buyer, sku, err := s.queueRequest(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	p, err := s.queueing.Me(r.Context(), buyer, sku, wait)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, r, http.StatusOK, p)
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
