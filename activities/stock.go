package activities

import (
	"context"
	"errors"
	"fmt"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/activities/contract"
	"github.com/flashsale/flashsale/internal/inventory"
	"github.com/flashsale/flashsale/internal/redisguard"
)

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
func (a *Activities) ReserveStock(ctx context.Context, in contract.ReserveStockInput) (contract.ReserveStockResult, error) {
	if in.FromOrder == "" && !in.AtPayment {
		degrade, why, err := a.mustDegrade(ctx, in.Items)
		if err != nil {
			return contract.ReserveStockResult{}, fmt.Errorf("reserve order %s: %w", in.OrderID, err)
		}
		if degrade {
			return a.degrade(ctx, in, why), nil
		}
	}
	if in.FromOrder == "" && !in.AtPayment && len(in.Items) == 1 && in.Deduct != flashsale.DeductHold {
		// A SKU that deducts at payment: the order takes a booking now,
		// its unit when paid (inventory/booking.go). A SKU the door read
		// as taking none (DeductHold) skips the call: a round trip saved
		// on every buy of a held SKU.
		it := in.Items[0]
		switch b, err := a.Stock.Book(ctx, in.OrderID, it.SKU, it.Quantity); {
		case err != nil && redisguard.IsOutage(err):
			return a.degrade(ctx, in, err.Error()), nil
		case err != nil:
			return contract.ReserveStockResult{}, fmt.Errorf("book %s for order %s: %w", it.SKU, in.OrderID, err)
		case b == inventory.Booked:
			return contract.ReserveStockResult{Deferred: true}, nil
		case b == inventory.NoBooking:
			op := fmt.Sprintf("book %s for order %s", it.SKU, in.OrderID)
			return contract.ReserveStockResult{}, refuseAs(flashsale.SoldOut, op,
				flashsale.Errorf(flashsale.SoldOut, "no booking left"), contract.SoldOutDetails{SKU: it.SKU})
		}
	}
	var res contract.ReserveStockResult
	for i, it := range in.Items {
		r, err := a.guardedReserve(ctx, in, it)
		// A payment's take (AtPayment) waits for Redis instead: the
		// units it takes must leave Redis too.
		if in.FromOrder == "" && !in.AtPayment && i == 0 && (errors.Is(err, errRedisDown) || redisguard.IsOutage(err)) {
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
			return contract.ReserveStockResult{}, refuse(op, err)
		default:
			return contract.ReserveStockResult{}, fmt.Errorf("%s: %w", op, err)
		}
		if err := a.release(ctx, in.OrderID, in.Items[:i]); err != nil {
			// Retrying the whole activity is safe: items already taken are
			// replayed, not taken twice, and the release runs again.
			return contract.ReserveStockResult{}, fmt.Errorf("undo partial reservation of order %s: %w", in.OrderID, err)
		}
		return contract.ReserveStockResult{}, refuse(op, err, contract.SoldOutDetails{SKU: it.SKU})
	}
	return res, nil
}

func (a *Activities) degrade(ctx context.Context, in contract.ReserveStockInput, why string) contract.ReserveStockResult {
	a.logger(ctx).Warn("reserving in mysql alone", "order_id", in.OrderID, "why", why)
	return contract.ReserveStockResult{Degraded: true, DegradedReason: why}
}

// ReleaseStock puts an order's Redis units back into the buckets they came
// from and clears the SKU's sold-out flag. It runs after the database has
// released the same units, so Redis never offers a unit MySQL still holds.
func (a *Activities) ReleaseStock(ctx context.Context, in contract.ReleaseStockInput) (contract.ReleaseStockResult, error) {
	var total int64
	for _, it := range in.Items {
		if in.Deferred {
			// The order's booking first; the units it took when paid, if
			// any, below.
			if err := a.Stock.Unbook(ctx, in.OrderID, it.SKU); err != nil {
				return contract.ReleaseStockResult{}, fmt.Errorf("unbook %s of order %s: %w", it.SKU, in.OrderID, err)
			}
		}
		if in.FromOrder != "" {
			n, err := a.Stock.Release(ctx, in.FromOrder, it.SKU)
			if err != nil {
				return contract.ReleaseStockResult{}, fmt.Errorf("release %s of order %s: %w", it.SKU, in.FromOrder, err)
			}
			total += n
		}
		n, err := a.Stock.Release(ctx, in.OrderID, it.SKU)
		if err != nil {
			return contract.ReleaseStockResult{}, fmt.Errorf("release %s of order %s: %w", it.SKU, in.OrderID, err)
		}
		total += n
	}
	return contract.ReleaseStockResult{Released: total}, nil
}

func (a *Activities) release(ctx context.Context, orderID string, items []flashsale.Item) error {
	_, err := a.ReleaseStock(ctx, contract.ReleaseStockInput{OrderID: orderID, Items: items})
	return err
}
