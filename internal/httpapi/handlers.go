package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/flashsale/flashsale/internal/catalog"
	"github.com/flashsale/flashsale/internal/edge"
	"github.com/flashsale/flashsale/internal/inventory"
	"github.com/flashsale/flashsale/internal/orderdb"
	"github.com/flashsale/flashsale/internal/orders"
	"github.com/flashsale/flashsale/workflows"
)

// orderCreated is the 201 answer to a buy request.
type orderCreated struct {
	OrderID string           `json:"order_id"`
	Status  workflows.Status `json:"status"`
	Amount  int64            `json:"amount"`
	PayBy   time.Time        `json:"pay_by"`
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
	clientID := in.OrderID != ""
	if strings.HasPrefix(in.OrderID, workflows.WaitlistOrderPrefix) {
		s.writeError(w, r, invalid("order ids starting with "+workflows.WaitlistOrderPrefix+" are reserved for waitlist offers"))
		return
	}
	if !clientID {
		// Time-ordered, so ids sort by creation in the database index.
		id, err := uuid.NewV7()
		if err != nil {
			s.writeError(w, r, fmt.Errorf("new order id: %w", err))
			return
		}
		in.OrderID = id.String()
	}

	ctx, cancel := context.WithTimeout(r.Context(), placeTimeout)
	defer cancel()
	items := make([]edge.Item, len(in.Items))
	for i, it := range in.Items {
		items[i] = edge.Item{SKU: it.SKU, Quantity: it.Quantity}
	}
	ticket, err := s.gate.Admit(ctx, edge.Request{OrderID: in.OrderID, ClientOrderID: clientID, UserID: in.UserID, Items: items})
	s.noteSKUs(items, err)
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
	res, err := s.deps.Orders.Place(ctx, in)
	if !ticket.Duplicate {
		hold.done(err == nil)
	}
	s.prom.placements.WithLabelValues(placementResult(res, err)).Inc()
	defer func() { s.prom.buy.WithLabelValues(buyAdmitted).Observe(time.Since(start).Seconds()) }()
	// The gate learns the outcome even if the buyer has gone: its slot must
	// be freed, and a sold-out answer is worth caching for the next buyer.
	ticket.Done(ctx, err == nil && res.Status == workflows.StatusRejected && res.Reason == workflows.ReasonSoldOut)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if res.Status == workflows.StatusRejected {
		s.writeError(w, r, rejection(res.Reason))
		return
	}
	s.writeJSON(w, r, http.StatusCreated, orderCreated{OrderID: res.OrderID, Status: res.Status, Amount: res.Amount, PayBy: res.PayBy})
}

// orderResponse is GET /api/v1/orders/{id}.
type orderResponse struct {
	OrderID string           `json:"order_id"`
	UserID  string           `json:"user_id"`
	Items   []workflows.Item `json:"items"`
	Status  workflows.Status `json:"status"`
	Amount  int64            `json:"amount"`
	PayBy   time.Time        `json:"pay_by,omitzero"`
	Reason  string           `json:"reason,omitempty"`
	// Refund is REQUIRED when money received for the order must go back.
	Refund   string                     `json:"refund,omitempty"`
	Payments []workflows.PaymentOutcome `json:"payments,omitempty"`
}

func (s *Server) orderID(r *http.Request) (string, error) {
	id := r.PathValue("id")
	return id, checkID("order id", id, workflows.MaxIDLength)
}

// ownOrder authenticates the request (admin token allowed) and reads the
// order it names. Another buyer's order answers 404 ORDER_NOT_FOUND, as an
// unknown id does, so nobody learns which ids exist.
func (s *Server) ownOrder(ctx context.Context, r *http.Request) (workflows.OrderView, error) {
	c, err := s.authenticate(r, true)
	if err != nil {
		return workflows.OrderView{}, err
	}
	id, err := s.orderID(r)
	if err != nil {
		return workflows.OrderView{}, err
	}
	view, err := s.deps.Orders.Status(ctx, id)
	if err != nil {
		return workflows.OrderView{}, err
	}
	if !c.owns(view.UserID) {
		return workflows.OrderView{}, fmt.Errorf("order %s of another buyer: %w", id, orders.ErrNotFound)
	}
	return view, nil
}

func (s *Server) getOrder(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), opTimeout)
	defer cancel()
	view, err := s.ownOrder(ctx, r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := orderResponse{
		OrderID: view.OrderID, UserID: view.UserID, Items: view.Items, Status: view.Status,
		Amount: view.Amount, PayBy: view.PayBy, Reason: view.Reason, Payments: view.Payments,
	}
	for _, p := range view.Payments {
		if p.Refund == workflows.RefundRequired {
			out.Refund = workflows.RefundRequired
		}
	}
	s.writeJSON(w, r, http.StatusOK, out)
}

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

type statusResponse struct {
	OrderID string           `json:"order_id"`
	Status  workflows.Status `json:"status"`
	Refund  string           `json:"refund,omitempty"`
}

// cancelOrder is POST /api/v1/orders/{id}/cancel. An order that is already
// closed, including one already cancelled, answers 409 ORDER_CLOSED: the
// buyer learns this request changed nothing.
func (s *Server) cancelOrder(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), opTimeout)
	defer cancel()
	// orders.Service.Cancel treats a repeated cancel as success (the CLI
	// relies on that); the API reports it, so look first (which also
	// checks the order is the caller's). Two cancels racing may both get
	// 200; both asked for what happened.
	view, err := s.ownOrder(ctx, r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	id := view.OrderID
	if view.Status.Closed() {
		s.writeError(w, r, fmt.Errorf("order %s is %s: %w", id, view.Status, orders.ErrClosed))
		return
	}
	view, err = s.deps.Orders.Cancel(ctx, id)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, r, http.StatusOK, statusResponse{OrderID: id, Status: view.Status})
}

// paymentCallback is POST /api/v1/payments/callback, the payment provider's
// webhook. The raw body is verified before it is parsed, so unsigned input
// never reaches the JSON decoder, let alone Temporal.
func (s *Server) paymentCallback(w http.ResponseWriter, r *http.Request) {
	// The order judges the payment by when it reached us, not by when its
	// workflow got to it: stamped before anything else can delay it.
	received := s.now()
	body, err := readBody(w, r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := VerifySignature(r.Header.Get(SignatureHeader), body, s.cfg.WebhookSecrets, s.now()); err != nil {
		s.writeError(w, r, &apiError{Status: http.StatusUnauthorized, Code: codeBadSignature, Message: err.Error()})
		return
	}
	cb, err := decodeCallback(body)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), opTimeout)
	defer cancel()

	if cb.Status == callbackFailed {
		// A failed payment moves no money: acknowledge it with what the
		// order is now, and leave the order to its deadline.
		view, err := s.deps.Orders.Snapshot(ctx, cb.OrderID)
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
		s.writeError(w, r, &apiError{Status: http.StatusConflict, Code: codeTransactionConflict,
			Message: "transaction_id was already used for another order; nothing was recorded for this one"})
		return
	}
	if out.Refund == workflows.RefundRequired && out.Reason == workflows.RefundReasonAmountMismatch {
		s.writeError(w, r, &apiError{Status: http.StatusUnprocessableEntity, Code: codeAmountMismatch,
			Message: "amount differs from the order's; the payment is recorded for refund and the order stays payable"})
		return
	}
	// Paid, a repeat of a handled transaction, or money that came after
	// the order closed (or for an order already paid): acknowledged with
	// 200, because a provider retries anything else for a day; the refund
	// is recorded exactly once in the payments table.
	s.writeJSON(w, r, http.StatusOK, statusResponse{OrderID: cb.OrderID, Status: out.Status, Refund: out.Refund})
}

// inventoryResponse is GET /api/v1/inventory/{sku}: Redis (available,
// is_sold_out, bucket_count) beside MySQL (the rest).
type inventoryResponse struct {
	SKU         string `json:"sku_id"`
	Total       int64  `json:"total"`
	Available   int64  `json:"available"`
	DBAvailable int64  `json:"db_available"`
	Frozen      int64  `json:"frozen"`
	Sold        int64  `json:"sold"`
	IsSoldOut   bool   `json:"is_sold_out"`
	BucketCount int    `json:"bucket_count"`
}

// readSKURequest reads what every SKU-addressed request with a body needs: the
// SKU id from the path, then the body (size-capped), decoded strictly.
func readSKURequest[T any](w http.ResponseWriter, r *http.Request, decode func([]byte) (T, error)) (string, T, error) {
	var zero T
	sku, err := skuParam(r)
	if err != nil {
		return "", zero, err
	}
	body, err := readBody(w, r)
	if err != nil {
		return "", zero, err
	}
	in, err := decode(body)
	if err != nil {
		return "", zero, err
	}
	return sku, in, nil
}

func skuParam(r *http.Request) (string, error) {
	sku := r.PathValue("sku")
	return sku, checkID("sku id", sku, workflows.MaxIDLength)
}

func (s *Server) getInventory(w http.ResponseWriter, r *http.Request) {
	sku, err := skuParam(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), opTimeout)
	defer cancel()
	inv, err := s.deps.Store.Inventory(ctx, sku)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := inventoryResponse{
		SKU: inv.SKU, Total: inv.Total, DBAvailable: inv.Available, Frozen: inv.Frozen, Sold: inv.Sold,
		BucketCount: inv.Buckets,
	}
	st, err := s.deps.Stock.Stock(ctx, sku)
	switch {
	case errors.Is(err, inventory.ErrUnknownSKU):
		// Defined in MySQL but never preheated: nothing is on sale.
		out.IsSoldOut = true
	case err != nil:
		s.writeError(w, r, err)
		return
	default:
		out.Available, out.BucketCount = st.Available, st.Buckets
		out.IsSoldOut = st.SoldOut || st.Available == 0
	}
	s.writeJSON(w, r, http.StatusOK, out)
}

// skuResponse is PUT /api/v1/admin/skus/{sku}.
type skuResponse struct {
	SKU          string `json:"sku_id"`
	Total        int64  `json:"total"`
	Price        int64  `json:"price"`
	Buckets      int    `json:"buckets"`
	PerUserLimit int    `json:"per_user_limit"`
	RedisTotal   int64  `json:"redis_total"`
	DBAvailable  int64  `json:"db_available"`
	Verified     bool   `json:"verified"`
}

// putSKU creates or resets a SKU before a sale: the database row, then the
// Redis buckets loaded from it, so Redis never keeps selling a previous
// sale's stock.
func (s *Server) putSKU(w http.ResponseWriter, r *http.Request) {
	sku, in, err := readSKURequest(w, r, decodeSKU)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), opTimeout)
	defer cancel()
	d, err := s.catalog().Define(ctx, orderdb.SKU{ID: sku, Total: in.Total, Price: in.Price, Buckets: in.Buckets, PerUserLimit: in.PerUserLimit})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	inv, pre := d.Inventory, d.Preheat
	// On sale from now: its stock gauges show before the first buyer.
	s.noteSKU(sku)
	s.writeJSON(w, r, http.StatusOK, skuResponse{
		SKU: inv.SKU, Total: inv.Total, Price: inv.Price, Buckets: inv.Buckets, PerUserLimit: inv.PerUserLimit,
		RedisTotal: pre.RedisTotal, DBAvailable: inv.Available, Verified: true,
	})
}

func (s *Server) catalog() catalog.Catalog {
	return catalog.Catalog{Orders: s.deps.Store, Stock: s.deps.Stock, Temporal: s.deps.Temporal}
}

type preheatResponse struct {
	SKU         string `json:"sku_id"`
	RedisTotal  int64  `json:"redis_total"`
	DBAvailable int64  `json:"db_available"`
	Verified    bool   `json:"verified"`
}

// preheat reloads a SKU's Redis buckets from the database's available stock
// and verifies the sum (a mismatch is 409 PREHEAT_MISMATCH).
func (s *Server) preheat(w http.ResponseWriter, r *http.Request) {
	sku, err := skuParam(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), opTimeout)
	defer cancel()
	d, err := s.catalog().Preheat(ctx, sku)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, r, http.StatusOK, preheatResponse{SKU: d.Inventory.SKU, RedisTotal: d.Preheat.RedisTotal,
		DBAvailable: d.Inventory.Available, Verified: true})
}

type restockResponse struct {
	SKU       string `json:"sku_id"`
	RequestID string `json:"request_id"`
	Quantity  int64  `json:"quantity"`
	// Added is false when this request id had been applied before.
	Added       bool  `json:"added"`
	Total       int64 `json:"total"`
	DBAvailable int64 `json:"db_available"`
	// OnSale is false when the SKU was never preheated: the units are in
	// the database and the next preheat puts them on sale.
	OnSale bool `json:"on_sale"`
}

// restock adds units mid-sale, idempotent by request_id: MySQL first (the
// truth, journaled), then Redis, whose bump clears the sold-out flag and
// publishes the change, so every API instance drops its sold-out cache.
// Redis is asked even when MySQL says "already applied", in case the first
// attempt died between the two; Redis remembers the request for a day, and
// a repeat after that would only make Redis offer units MySQL then refuses
// (recorded as drift), never an oversale.
func (s *Server) restock(w http.ResponseWriter, r *http.Request) {
	sku, req, err := readSKURequest(w, r, decodeRestock)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), opTimeout)
	defer cancel()
	res, err := s.deps.Store.Restock(ctx, sku, req.Quantity, req.RequestID)
	if errors.Is(err, orderdb.ErrInvalidArgument) {
		// Input was validated above; what is left is the idempotency key
		// reused for a different quantity.
		s.writeError(w, r, invalid("request_id was already used with a different quantity"))
		return
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	onSale := true
	if _, err := s.deps.Stock.Restock(ctx, sku, req.RequestID, req.Quantity); err != nil {
		if !errors.Is(err, inventory.ErrUnknownSKU) {
			s.writeError(w, r, err)
			return
		}
		onSale = false
	}
	s.writeJSON(w, r, http.StatusOK, restockResponse{
		SKU: sku, RequestID: req.RequestID, Quantity: req.Quantity, Added: res.Added,
		Total: res.Inventory.Total, DBAvailable: res.Inventory.Available, OnSale: onSale,
	})
}
