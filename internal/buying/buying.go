// Package buying is the buy use case: a buyer's request names the order
// it places, passes the load-shedding gate (internal/edge) and the
// placement limit, and, admitted, is placed as an order workflow
// (internal/orders). The HTTP door decodes a request, calls Buy and
// encodes its answer; what the buy decided reaches the door's metrics
// through a Recorder, so the door only records.
package buying

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/internal/edge"
	"github.com/flashsale/flashsale/internal/sale"
	"github.com/flashsale/flashsale/workflows"
)

// Placer places an order and waits for its reservation answer
// (orders.Service's Place: Update-with-Start). Placing the same order id
// again returns the first answer.
type Placer interface {
	Place(ctx context.Context, in workflows.OrderInput) (workflows.Reservation, error)
}

// Recorder hears what a buy decided, for metrics. Its methods are called
// on the buy's path and must not block.
type Recorder interface {
	// Admission is the gate's answer: err is its refusal, or nil with
	// duplicate true for a repeat of a placed order (sent on unread).
	Admission(items []flashsale.Item, duplicate bool, err error)
	// Started is a new order about to be placed (not a repeat).
	Started()
	// Placed is the order workflow's answer to an admitted request.
	Placed(res workflows.Reservation, err error)
}

// Sales is the fair sale's part of a buy (sale.Door): Check refuses a buy
// of a SKU with a sale unless it carries a valid pass of the buyer's, and
// answers nil for a SKU without one; the claim is spent on the order once
// the order may be placed.
type Sales interface {
	Check(ctx context.Context, buyer string, items []flashsale.Item, pass string) (*sale.Claim, error)
}

// Service buys. Every field but Sales and Logger is required; without
// Sales no SKU has a fair sale.
type Service struct {
	Gate     *edge.Gate
	Orders   Placer
	Recorder Recorder
	Sales    Sales
	Logger   *slog.Logger
}

// Request is a buy request that passed input validation, from an
// authenticated buyer.
type Request struct {
	Buyer string
	// Key is the buyer's optional idempotency key (see OrderIDFor).
	Key   string
	Items []flashsale.Item
	// Pass is the buyer's pass for a SKU with a fair sale (the Sale-Pass
	// header); empty otherwise.
	Pass string
}

// settleTimeout bounds settling a pass once its order answered.
const settleTimeout = 2 * time.Second

// Outcome names what decided a buy.
type Outcome string

// Outcomes of a buy.
const (
	// Shed: the gate or the placement limit answered; no workflow was
	// asked.
	Shed Outcome = "shed"
	// Admitted: the order workflow answered (or failed to).
	Admitted Outcome = "admitted"
)

// Result is a buy's answer. Its Outcome is set whenever the buy reached
// the gate, with or without an error; Reservation only once the order
// workflow answered.
type Result struct {
	Outcome     Outcome
	Reservation workflows.Reservation
}

// Rejected reports whether the order workflow refused the order; the
// reason is Reservation.Reason, a code. A rejection is the order's answer,
// not a failure of the buy.
func (r Result) Rejected() bool { return r.Reservation.Status == flashsale.StatusRejected }

// Buy names the order (OrderIDFor), checks a fair sale's pass, asks the
// gate (whose ticket holds a placement permit for a new order), spends the
// pass, places the order and tells the gate how it ended. The errors are
// the sale's refusals (sale.Door.Check, sale.Store.Spend), the gate's
// (edge's, wrapped; a RetryError for BUSY, the placement limit's included,
// and RATE_LIMITED), and PlaceOrder's.
func (s *Service) Buy(ctx context.Context, req Request) (Result, error) {
	id, err := OrderIDFor(req.Buyer, req.Key)
	if err != nil {
		return Result{}, err
	}
	var claim *sale.Claim
	if s.Sales != nil {
		if claim, err = s.Sales.Check(ctx, req.Buyer, req.Items, req.Pass); err != nil {
			return Result{Outcome: Shed}, err
		}
	}
	ticket, err := s.Gate.Admit(ctx, edge.Request{OrderID: id, ClientOrderID: req.Key != "", UserID: req.Buyer, Items: req.Items,
		Pass: claim != nil && claim.Live})
	s.Recorder.Admission(req.Items, err == nil && ticket.Duplicate, err)
	if err != nil {
		return Result{Outcome: Shed}, err
	}
	// Last before the placement: a buyer told BUSY (by the gate or the
	// placement limit, both inside Admit) keeps the pass for the retry.
	// The same order spends it again without error (a repeat).
	if claim != nil {
		if err := claim.Spend(ctx, id); err != nil {
			ticket.Done(ctx, false)
			return Result{Outcome: Shed}, err
		}
	}
	if !ticket.Duplicate {
		s.Recorder.Started()
	}
	// The ticket's Deduct spares the order the booking call of a SKU the
	// gate's stock read found taking none.
	res, err := s.Orders.Place(ctx, workflows.OrderInput{OrderID: id, UserID: req.Buyer, Items: req.Items, Deduct: ticket.Deduct})
	ticket.Placed(err == nil)
	s.Recorder.Placed(res, err)
	rejected := err == nil && res.Status == flashsale.StatusRejected
	// The gate learns the outcome even if the buyer has gone: its slot must
	// be freed, and a sold-out answer is worth caching for the next buyer.
	ticket.Done(ctx, rejected && res.Reason == flashsale.SoldOut)
	if claim != nil && err == nil {
		// The pass counted as outstanding while its order was placed (its
		// unit still in the buckets); the answer settles it. A pass that
		// bought nothing (a buy in flight took the unit it went out for,
		// or MySQL had none) goes back to its holder: outstanding again
		// while a unit is left for it, else released and its holder told
		// the sell-out by queue/me. Any other answer spends it for good.
		// Owed even to a buyer who hung up: bounded, and not cut short by
		// their going. A failure leaves the pass outstanding until its
		// expiry; this buy's answer is the same. So does a placement whose
		// answer is unknown (err): its order may still take the unit.
		noUnit := rejected && (res.Reason == flashsale.SoldOut || res.Reason == flashsale.StockDrift)
		settleCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
		serr := claim.Settle(settleCtx, id, !noUnit)
		cancel()
		if serr != nil {
			s.logger().Warn("settle the pass of a buy", "order_id", id, "bought", !noUnit, "err", serr)
		}
	}
	return Result{Outcome: Admitted, Reservation: res}, err
}

// OrderIDFor is the id of the order a buy request places. Without a key of
// the buyer's own it is new (a UUIDv7, time-ordered, so ids sort by
// creation in the database index). With one it is
// flashsale.BuyerOrderID(buyer, key): the key is the buyer's idempotency
// key, never an id shared with other buyers, so nobody can take it first
// and no answer tells anyone whether another buyer used it. It reads
// nothing: the gate reads the id's placed marker once (edge.Gate.Admit).
func OrderIDFor(buyer, key string) (string, error) {
	if key == "" {
		id, err := uuid.NewV7()
		if err != nil {
			return "", fmt.Errorf("new order id: %w", err)
		}
		return id.String(), nil
	}
	return flashsale.BuyerOrderID(buyer, key), nil
}

func (s *Service) logger() *slog.Logger {
	if s.Logger == nil {
		return slog.Default()
	}
	return s.Logger
}
