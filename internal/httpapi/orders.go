package httpapi

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/internal/buying"
	"github.com/flashsale/flashsale/internal/edge"
	"github.com/flashsale/flashsale/internal/orders"
	"github.com/flashsale/flashsale/internal/sale"
	"github.com/flashsale/flashsale/workflows"
)

// orderCreated is the 201 answer to a buy request.
type orderCreated struct {
	// OrderID is the system's id of the order (see buying.OrderIDFor): GET,
	// cancel and the payment provider name the order by it.
	OrderID string `json:"order_id"`
	// ClientOrderID echoes the request's client_order_id, the buyer's own
	// key, when it had one.
	ClientOrderID string           `json:"client_order_id,omitempty"`
	Status        flashsale.Status `json:"status"`
	Amount        int64            `json:"amount"`
	PayBy         time.Time        `json:"pay_by"`
}

// createOrder is POST /api/v1/orders: authenticate, decode, buy
// (internal/buying: the edge, then Update-with-Start), encode the
// reservation. The buyer is the token's subject.
func (s *Server) createOrder(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	c, err := s.authenticate(r, false)
	if sku, repeat := maybeRepeat(r); err != nil && repeat {
		// A SKU held as sold out, and a key that may repeat a placed
		// order: only its buyer may hear that order's answer. Anyone else
		// hears what the quick path tells every caller (quick.go).
		s.gate.CountSoldOutLocal()
		s.writeError(w, r, flashsale.Errorf(flashsale.SoldOut, "sold out"))
		took := time.Since(start)
		s.prom.buy.WithLabelValues(string(buying.Shed)).Observe(took.Seconds())
		s.traffic.Observe(sku, http.StatusConflict, true, took)
		return
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	body, err := readBody(w, r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	in, key, err := decodeOrder(body)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := c.claimedUser(in.UserID); err != nil {
		s.writeError(w, r, err)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), placeTimeout)
	defer cancel()
	res, err := s.buying.Buy(ctx, buying.Request{Buyer: c.buyer, Key: key, Items: in.Items,
		Pass: r.Header.Get(sale.PassHeader)})
	if res.Outcome != "" {
		// After the answer is written, as the whole answer time.
		defer func() {
			took := time.Since(start)
			s.prom.buy.WithLabelValues(string(res.Outcome)).Observe(took.Seconds())
			s.countSaleTraffic(w, in.Items, res.Outcome, err, took)
		}()
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if res.Rejected() {
		// The reason is a code, answered with the code's own words; a
		// rejection is the order's answer, not a failure of this request.
		s.writeError(w, r, refuse(res.Reservation.Reason, ""))
		return
	}
	rv := res.Reservation
	s.writeJSON(w, r, http.StatusCreated, orderCreated{OrderID: rv.OrderID, ClientOrderID: key,
		Status: rv.Status, Amount: rv.Amount, PayBy: rv.PayBy})
}

// orderResponse is GET /api/v1/orders/{id}.
type orderResponse struct {
	workflows.OrderSummary
	// Refund is REQUIRED when money received for the order must go back.
	Refund   string         `json:"refund,omitempty"`
	Payments []paymentEntry `json:"payments,omitempty"`
}

// paymentEntry is one payment the order handled. OrderStatus is what the
// payment left the order in: named so, because a payment's own "status"
// would read as the payment's (the callback's payment_status).
type paymentEntry struct {
	TransactionID string           `json:"transaction_id"`
	OrderStatus   flashsale.Status `json:"order_status"`
	Refund        string           `json:"refund,omitempty"`
	Reason        flashsale.Code   `json:"reason,omitempty"`
	Duplicate     bool             `json:"duplicate,omitempty"`
	Queued        bool             `json:"queued,omitempty"`
	Conflict      bool             `json:"conflict,omitempty"`
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
	out := orderResponse{OrderSummary: view.OrderSummary}
	for _, p := range view.Payments {
		if p.Refund == workflows.RefundRequired {
			out.Refund = workflows.RefundRequired
		}
		out.Payments = append(out.Payments, paymentEntry{
			TransactionID: p.TransactionID, OrderStatus: p.Status, Refund: p.Refund,
			Reason: p.Reason, Duplicate: p.Duplicate, Queued: p.Queued, Conflict: p.Conflict,
		})
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
