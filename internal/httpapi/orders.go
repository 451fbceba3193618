package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/google/uuid"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/internal/edge"
	"github.com/flashsale/flashsale/internal/orders"
	"github.com/flashsale/flashsale/workflows"
)

// orderCreated is the 201 answer to a buy request.
type orderCreated struct {
	// OrderID is the system's id of the order (see orderIDFor): GET,
	// cancel and the payment provider name the order by it.
	OrderID string `json:"order_id"`
	// ClientOrderID echoes the buyer's own key, when the request had one.
	ClientOrderID string           `json:"client_order_id,omitempty"`
	Status        flashsale.Status `json:"status"`
	Amount        int64            `json:"amount"`
	PayBy         time.Time        `json:"pay_by"`
}

// createOrder is POST /api/v1/orders: authenticate, validate, pass the
// edge, then place the order with Update-with-Start and answer with its
// reservation. The buyer is the token's subject.
func (s *Server) createOrder(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	c, err := s.authenticate(r, false)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	body, err := readBody(w, r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	in, err := decodeOrder(body)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := c.claimedUser(in.UserID); err != nil {
		s.writeError(w, r, err)
		return
	}
	in.UserID = c.buyer
	ctx, cancel := context.WithTimeout(r.Context(), placeTimeout)
	defer cancel()
	clientKey := in.OrderID
	clientID := clientKey != ""
	if in.OrderID, err = s.orderIDFor(ctx, c.buyer, clientKey); err != nil {
		s.writeError(w, r, err)
		return
	}
	ticket, err := s.gate.Admit(ctx, edge.Request{OrderID: in.OrderID, ClientOrderID: clientID, UserID: in.UserID, Items: in.Items})
	s.noteSKUs(in.Items, ticket, err)
	if err != nil {
		s.writeError(w, r, err)
		s.prom.buy.WithLabelValues(buyShed).Observe(time.Since(start).Seconds())
		return
	}
	var hold permit
	if !ticket.Duplicate {
		if hold, err = s.admit.tryPlace(); err != nil {
			ticket.Done(ctx, false)
			s.writeError(w, r, err)
			s.prom.buy.WithLabelValues(buyShed).Observe(time.Since(start).Seconds())
			return
		}
		s.metrics.workflowsStarted.Add(1)
		s.prom.started.Inc()
	}
	res, err := s.deps.Orders.PlaceOrder(ctx, in)
	if !ticket.Duplicate {
		hold.done(err == nil)
	}
	s.prom.placements.WithLabelValues(placementResult(res, err)).Inc()
	defer func() { s.prom.buy.WithLabelValues(buyAdmitted).Observe(time.Since(start).Seconds()) }()
	// The gate learns the outcome even if the buyer has gone: its slot must
	// be freed, and a sold-out answer is worth caching for the next buyer.
	rejected := err == nil && res.Status == flashsale.StatusRejected
	ticket.Done(ctx, rejected && res.Reason == flashsale.SoldOut)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if rejected {
		// The reason is a code, answered with the code's own words; a
		// rejection is the order's answer, not a failure of this request.
		s.writeError(w, r, refuse(res.Reason, ""))
		return
	}
	s.writeJSON(w, r, http.StatusCreated, orderCreated{OrderID: res.OrderID, ClientOrderID: clientKey,
		Status: res.Status, Amount: res.Amount, PayBy: res.PayBy})
}

// orderIDFor is the id of the order a buy request places. Without a key of
// the buyer's own it is new (a UUIDv7, time-ordered, so ids sort by
// creation in the database index). With one it is
// flashsale.BuyerOrderID(buyer, key): the key is the buyer's idempotency
// key, never an id shared with other buyers, so nobody can take it first
// and no answer tells anyone whether another buyer used it.
//
// Orders placed before that scheme are named by the bare key (workflow
// order-<key>). A retry of one must reach it, not buy a second unit: the
// edge's placed marker of the bare key names the buyer it was placed for,
// for as long as a retry skips shedding (edge.DefaultPlacedTTL, 24 h).
// Only that buyer is sent to it; for anyone else the key is theirs alone as
// for any key, so the marker tells them nothing. The lookup can go once
// every marker written before the scheme has expired.
func (s *Server) orderIDFor(ctx context.Context, buyer, key string) (string, error) {
	if key == "" {
		id, err := uuid.NewV7()
		if err != nil {
			return "", fmt.Errorf("new order id: %w", err)
		}
		return id.String(), nil
	}
	owner, err := s.gate.PlacedBy(ctx, key)
	switch {
	case err != nil:
		// Redis down: the edge degrades to MySQL; a retry of an order of
		// the old scheme within that outage gets an order of the new one.
		s.log.DebugContext(ctx, "placed marker of an order key unreadable", "error", err)
	case owner == buyer:
		return key, nil
	}
	return flashsale.BuyerOrderID(buyer, key), nil
}

// orderResponse is GET /api/v1/orders/{id}.
type orderResponse struct {
	OrderID string           `json:"order_id"`
	UserID  string           `json:"user_id"`
	Items   []flashsale.Item `json:"items"`
	Status  flashsale.Status `json:"status"`
	Amount  int64            `json:"amount"`
	PayBy   time.Time        `json:"pay_by,omitzero"`
	Reason  string           `json:"reason,omitempty"`
	// Refund is REQUIRED when money received for the order must go back.
	Refund   string                     `json:"refund,omitempty"`
	Payments []workflows.PaymentOutcome `json:"payments,omitempty"`
}

func (s *Server) orderID(r *http.Request) (string, error) {
	id := r.PathValue("id")
	return id, checkID("order id", id, flashsale.MaxIDLength)
}

// orderRequest authenticates a request naming an order (the admin token
// allowed) and spends one of the buyer's order requests: reads cost MySQL,
// and a buyer's own open order a Temporal query, so nobody may ask without
// bound. Who may see the order is decided by internal/orders, owner first:
// another buyer's order answers 404 ORDER_NOT_FOUND, as an unknown id
// does, at the same cost, so nobody learns which ids exist.
func (s *Server) orderRequest(ctx context.Context, r *http.Request) (string, orders.Viewer, error) {
	c, err := s.authenticate(r, true)
	if err != nil {
		return "", orders.Viewer{}, err
	}
	id, err := s.orderID(r)
	if err != nil {
		return "", orders.Viewer{}, err
	}
	if c.admin {
		return id, orders.Viewer{Any: true}, nil
	}
	err = s.gate.RateLimitAt(ctx, edge.ScopeOrders, c.buyer, s.cfg.OrderRate)
	if re, ok := errors.AsType[*edge.RetryError](err); ok {
		// The edge's words are about buys.
		re.Err = refuse(flashsale.RateLimited, "too many order requests from this user; retry later")
		return "", orders.Viewer{}, err
	}
	if err != nil {
		// Redis down: reads go on, bounded by what they cost without it
		// (a MySQL point read for an order that is not the caller's).
		s.log.DebugContext(ctx, "order rate limit unavailable; read allowed", "error", err)
	}
	return id, orders.Viewer{Buyer: c.buyer, PlacedBy: s.gate.PlacedBy}, nil
}

func (s *Server) getOrder(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), opTimeout)
	defer cancel()
	id, v, err := s.orderRequest(ctx, r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	view, err := s.deps.Orders.Read(ctx, id, v)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := orderResponse{
		OrderID: view.OrderID, UserID: view.UserID, Items: view.Items, Status: view.Status,
		Amount: view.Amount, PayBy: view.PayBy, Reason: string(view.Reason), Payments: view.Payments,
	}
	for _, p := range view.Payments {
		if p.Refund == workflows.RefundRequired {
			out.Refund = workflows.RefundRequired
		}
	}
	s.writeJSON(w, r, http.StatusOK, out)
}

type statusResponse struct {
	OrderID string           `json:"order_id"`
	Status  flashsale.Status `json:"status"`
	Refund  string           `json:"refund,omitempty"`
}

// cancelOrder is POST /api/v1/orders/{id}/cancel. An order that is already
// closed, including one already cancelled, answers 409 ORDER_CLOSED: the
// buyer learns this request changed nothing.
func (s *Server) cancelOrder(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), opTimeout)
	defer cancel()
	// orders.Service.Cancel treats a repeated cancel as success (the CLI
	// relies on that); the API reports it: CancelOwned answers an order
	// already closed OrderClosed. Two cancels racing may both get 200;
	// both asked for what happened.
	id, v, err := s.orderRequest(ctx, r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	view, err := s.deps.Orders.CancelOwned(ctx, id, v)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, r, http.StatusOK, statusResponse{OrderID: id, Status: view.Status})
}
