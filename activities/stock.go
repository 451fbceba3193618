package activities

import (
	"context"
	"errors"
	"fmt"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/internal/inventory"
	"github.com/flashsale/flashsale/internal/redisguard"
)

// ReserveStockInput names the order and what it wants.
type ReserveStockInput struct {
	OrderID string           `json:"order_id"`
	Items   []flashsale.Item `json:"items"`
	// UserID is the buyer, whose units are counted against each SKU's
	// per-buyer limit before any is taken (inventory.Store.ReserveFor).
	// Empty in histories recorded before the limit moved into Redis:
	// those orders count nothing there.
	UserID string `json:"user_id,omitempty"`
	// FromOrder, when set, names a released order whose Redis units this
	// order takes over instead of taking from the buckets (a waitlist
	// offer; see Store.Transfer). Only single-item orders carry it.
	FromOrder string `json:"from_order,omitempty"`
}

// ReserveStockResult lists, per item, the buckets the units came from.
type ReserveStockResult struct {
	Reservations []inventory.Reservation `json:"reservations"`
	// Degraded: Redis could not be used (unreachable, or the SKU awaits a
	// resync), so nothing was taken from it; the order is reserved in
	// MySQL alone (CreateOrderInput.Degraded). See degraded.go.
	Degraded bool `json:"degraded,omitempty"`
	// DegradedReason says why, for the order's history.
	DegradedReason string `json:"degraded_reason,omitempty"`
}

// ReserveStock pre-deducts every item in Redis, all or nothing: when an item
// is short or over its buyer's limit, the items already taken are given
// back before the order is refused (SoldOut, UnknownSKU, LimitExceeded), so
// a refused order holds nothing. Retries are safe because every Redis step
// is idempotent per order id.
//
// When Redis cannot be used, it answers Degraded instead and takes nothing
// (degraded.go): Redis is known down, a SKU awaits a resync, or the first
// item's call met an outage. An outage after the first item fails the
// attempt as before; the retry then finds the guard open and degrades, and
// the units the first attempt took stay under their markers, which the
// order's release gives back like any other. Waitlist offers never
// degrade: they hand over units Redis holds.
func (a *Activities) ReserveStock(ctx context.Context, in ReserveStockInput) (ReserveStockResult, error) {
	if in.FromOrder == "" {
		degrade, why, err := a.mustDegrade(ctx, in.Items)
		if err != nil {
			return ReserveStockResult{}, fmt.Errorf("reserve order %s: %w", in.OrderID, err)
		}
		if degrade {
			return a.degrade(ctx, in, why), nil
		}
	}
	var res ReserveStockResult
	for i, it := range in.Items {
		r, err := a.guardedReserve(ctx, in, it)
		if in.FromOrder == "" && i == 0 && (errors.Is(err, errRedisDown) || redisguard.IsOutage(err)) {
			return a.degrade(ctx, in, err.Error()), nil
		}
		if err == nil {
			res.Reservations = append(res.Reservations, r)
			continue
		}
		op := fmt.Sprintf("reserve %s for order %s", it.SKU, in.OrderID)
		switch flashsale.ErrorCode(err) {
		case flashsale.SoldOut, flashsale.AlreadyReleased, flashsale.UnknownSKU, flashsale.LimitExceeded:
		case flashsale.Invalid:
			// Input the order was validated against cannot become valid
			// by retrying (e.g. a retry asking for a different quantity).
			return ReserveStockResult{}, refuse(op, err)
		default:
			return ReserveStockResult{}, fmt.Errorf("%s: %w", op, err)
		}
		if err := a.release(ctx, in.OrderID, in.Items[:i]); err != nil {
			// Retrying the whole activity is safe: items already taken are
			// replayed, not taken twice, and the release runs again.
			return ReserveStockResult{}, fmt.Errorf("undo partial reservation of order %s: %w", in.OrderID, err)
		}
		return ReserveStockResult{}, refuse(op, err, SoldOutDetails{SKU: it.SKU})
	}
	return res, nil
}

func (a *Activities) degrade(ctx context.Context, in ReserveStockInput, why string) ReserveStockResult {
	a.logger(ctx).Warn("reserving in mysql alone", "order_id", in.OrderID, "why", why)
	return ReserveStockResult{Degraded: true, DegradedReason: why}
}

// ReleaseStockInput names the order whose Redis units go back on sale.
type ReleaseStockInput struct {
	OrderID string           `json:"order_id"`
	Items   []flashsale.Item `json:"items"`
	// FromOrder is the released order a waitlist offer took its units
	// from. Its units are released too: after a successful hand-over that
	// moves nothing (its markers say "given back"), and if the hand-over
	// never happened (Redis down past the reservation budget) it returns
	// the units nobody else would release.
	FromOrder string `json:"from_order,omitempty"`
}

// ReleaseStockResult reports how many units this call returned; a retry
// reports 0 because the first attempt already returned them.
type ReleaseStockResult struct {
	Released int64 `json:"released"`
}

// ReleaseStock puts an order's Redis units back into the buckets they came
// from and clears the SKU's sold-out flag. It runs after the database has
// released the same units, so Redis never offers a unit MySQL still holds.
func (a *Activities) ReleaseStock(ctx context.Context, in ReleaseStockInput) (ReleaseStockResult, error) {
	var total int64
	for _, it := range in.Items {
		if in.FromOrder != "" {
			n, err := a.Stock.Release(ctx, in.FromOrder, it.SKU)
			if err != nil {
				return ReleaseStockResult{}, fmt.Errorf("release %s of order %s: %w", it.SKU, in.FromOrder, err)
			}
			total += n
		}
		n, err := a.Stock.Release(ctx, in.OrderID, it.SKU)
		if err != nil {
			return ReleaseStockResult{}, fmt.Errorf("release %s of order %s: %w", it.SKU, in.OrderID, err)
		}
		total += n
	}
	return ReleaseStockResult{Released: total}, nil
}

func (a *Activities) release(ctx context.Context, orderID string, items []flashsale.Item) error {
	_, err := a.ReleaseStock(ctx, ReleaseStockInput{OrderID: orderID, Items: items})
	return err
}
