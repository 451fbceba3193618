package httpapi

import (
	"context"
	"net/http"
	"time"

	"github.com/flashsale/flashsale/internal/catalog"
	"github.com/flashsale/flashsale/workflows"
)

// The operators' controls of a fair sale: each decodes, calls catalog.Sales
// (the same use case as `starter sale`) and encodes the sale's view.

func (s *Server) saleControls() catalog.Sales {
	return catalog.Sales{DB: s.deps.Store, Temporal: s.deps.Temporal, TaskQueue: s.deps.Orders.TaskQueue}
}

// startSaleRequest is POST /api/v1/admin/skus/{sku}/sale.
type startSaleRequest struct {
	OpensAt time.Time `json:"opens_at"`
	// PassTTLSeconds is how long a pass may be spent (default 60).
	PassTTLSeconds int64 `json:"pass_ttl_seconds"`
	// MaxEntrants caps the queue (default sale.DefaultMaxEntrants).
	MaxEntrants int64 `json:"max_entrants"`
	// ClosesAt is the sale's end (optional: none, closed by hand).
	ClosesAt time.Time `json:"closes_at"`
	// ExpectedPeakRPS sizes the go/no-go's capacity check (0: none).
	ExpectedPeakRPS int64 `json:"expected_peak_rps"`
}

func decodeStartSale(body []byte) (startSaleRequest, error) {
	var req startSaleRequest
	if err := decodeJSON(body, &req); err != nil {
		return startSaleRequest{}, err
	}
	if req.OpensAt.IsZero() {
		return startSaleRequest{}, invalid("opens_at is required (RFC 3339)")
	}
	if req.PassTTLSeconds < 0 || req.PassTTLSeconds > 3600 {
		return startSaleRequest{}, invalid("pass_ttl_seconds must be between 0 (the default, 60) and 3600")
	}
	if req.MaxEntrants < 0 {
		return startSaleRequest{}, invalid("max_entrants must not be negative (0: the default)")
	}
	if req.ExpectedPeakRPS < 0 || req.ExpectedPeakRPS > MaxExpectedPeak {
		return startSaleRequest{}, invalid("expected_peak_rps must be between 0 (not checked) and 1000000000")
	}
	if !req.ClosesAt.IsZero() && !req.ClosesAt.After(req.OpensAt) {
		return startSaleRequest{}, invalid("closes_at must be after opens_at")
	}
	return req, nil
}

// startSale is POST /api/v1/admin/skus/{sku}/sale: starts the SKU's
// SaleWorkflow and answers once its pre-queue is open with the seed's
// commitment. 404 UNKNOWN_SKU, 409 SALE_STATE_CONFLICT while a sale of the
// SKU runs, or after one ended until the SKU is preheated again.
func (s *Server) startSale() http.HandlerFunc {
	return skuEndpoint(s, decodeStartSale, func(ctx context.Context, sku string, in startSaleRequest) (workflows.SaleView, error) {
		return s.saleControls().Start(ctx, workflows.SaleInput{SKU: sku, OpensAt: in.OpensAt,
			PassTTL: time.Duration(in.PassTTLSeconds) * time.Second, MaxEntrants: in.MaxEntrants,
			ClosesAt: in.ClosesAt, ExpectedPeak: in.ExpectedPeakRPS})
	})
}

// getSale is GET /api/v1/admin/skus/{sku}/sale: the sale as its workflow
// knows it. 404 NO_SALE.
func (s *Server) getSale() http.HandlerFunc {
	return skuEndpoint(s, nil, func(ctx context.Context, sku string, _ struct{}) (workflows.SaleView, error) {
		return s.saleControls().View(ctx, sku)
	})
}

// saleControlRequest is POST /api/v1/admin/skus/{sku}/sale/{action}'s
// optional body.
type saleControlRequest struct {
	Reason string `json:"reason"`
	// ClosesAt is the closes_at action's new end, and only its.
	ClosesAt time.Time `json:"closes_at"`
}

func decodeSaleControl(body []byte) (saleControlRequest, error) {
	var req saleControlRequest
	if len(body) == 0 {
		return req, nil
	}
	if err := decodeJSON(body, &req); err != nil {
		return saleControlRequest{}, err
	}
	if len(req.Reason) > 500 {
		return saleControlRequest{}, invalid("reason longer than 500 characters")
	}
	return req, nil
}

// MaxExpectedPeak bounds a sale's expected peak (buy requests per second):
// the capacity model's arithmetic stays far from overflow.
const MaxExpectedPeak = 1_000_000_000

// controlTimeout bounds a sale control: a void answers once the cancels of
// the sale's unpaid orders are sent (thousands, in parallel) and its paid
// orders are refunded, longer than a read.
const controlTimeout = time.Minute

// DefaultSaleControlWait is Config.SaleControlWait's default: a control
// not answered by then (an open shuffling a large queue, a void refunding)
// is answered 202 well before the server's write timeout (placeTimeout +
// 10 s) would drop the connection with no answer at all (issue 35).
const DefaultSaleControlWait = placeTimeout - 5*time.Second

// controlAccepted is the 202 of a control still running: GET Poll for the
// sale's state.
type controlAccepted struct {
	SKU    string `json:"sku_id"`
	Action string `json:"action"`
	Poll   string `json:"poll"`
}

// controlSale is POST /api/v1/admin/skus/{sku}/sale/{action} with action
// open, pause, resume, close or void: the sale workflow's Update, answered
// once every API instance will act on it. 400 for another action, 404
// NO_SALE, 409 SALE_STATE_CONFLICT when the sale's state does not allow it.
// A control still running after SaleControlWait is answered 202 with the
// sale's address in Location (GET it for the state); it goes on, within
// controlTimeout, whether the client waits or not.
func (s *Server) controlSale() http.HandlerFunc {
	wait := s.cfg.SaleControlWait
	if wait <= 0 {
		wait = DefaultSaleControlWait
	}
	return func(w http.ResponseWriter, r *http.Request) {
		action := r.PathValue("action")
		skuEndpointWithin(s, controlTimeout, decodeSaleControl,
			func(ctx context.Context, sku string, in saleControlRequest) (any, error) {
				type answer struct {
					view workflows.SaleView
					err  error
				}
				done := make(chan answer, 1)
				// Not cancelled with the request: a control sent goes on
				// (the Update is the workflow's once accepted).
				run, cancel := context.WithTimeout(context.WithoutCancel(ctx), controlTimeout)
				go func() {
					defer cancel()
					v, err := s.control(run, sku, action, in)
					done <- answer{v, err}
				}()
				t := time.NewTimer(wait)
				defer t.Stop()
				select {
				case a := <-done:
					return a.view, a.err
				case <-t.C:
				}
				poll := "/api/v1/admin/skus/" + sku + "/sale"
				return accepted{Location: poll, Body: controlAccepted{SKU: sku, Action: action, Poll: poll}}, nil
			})(w, r)
	}
}

// control is one control: the closes_at action moves the sale's end, the
// others are catalog.Sales.Control's.
func (s *Server) control(ctx context.Context, sku, action string, in saleControlRequest) (workflows.SaleView, error) {
	switch {
	case action == workflows.UpdateSaleClosesAt && in.ClosesAt.IsZero():
		return workflows.SaleView{}, invalid("closes_at is required (RFC 3339)")
	case action == workflows.UpdateSaleClosesAt:
		return s.saleControls().MoveEnd(ctx, sku, in.ClosesAt, in.Reason)
	case !in.ClosesAt.IsZero():
		return workflows.SaleView{}, invalid("closes_at is the closes_at action's")
	}
	return s.saleControls().Control(ctx, sku, action, in.Reason)
}

// closeSKU is POST /api/v1/admin/skus/{sku}/close: ends the selling of a
// SKU sold without a queue as a sale's close does (catalog.Sales.Close),
// answered once every buy is refused; GET the sale for the report. 404
// UNKNOWN_SKU, 409 SALE_STATE_CONFLICT while its fair sale runs or once
// its selling ended.
func (s *Server) closeSKU() http.HandlerFunc {
	return skuEndpoint(s, nil, func(ctx context.Context, sku string, _ struct{}) (workflows.SaleView, error) {
		return s.saleControls().Close(ctx, sku)
	})
}
