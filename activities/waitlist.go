package activities

import (
	"context"
	"fmt"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/activities/contract"
)

// reserveItem takes one item's units: from the buckets, or, for a waitlist
// offer, from the released order named by in.FromOrder. The transfer moves
// no bucket stock, so the released unit is never on open sale between the
// two orders; its errors are the same as Reserve's (ErrSoldOut when the
// released order holds nothing any more), so ReserveStock maps them alike.
func (a *Activities) reserveItem(ctx context.Context, in contract.ReserveStockInput, it flashsale.Item) (flashsale.Reservation, error) {
	if in.FromOrder == "" {
		return a.Stock.ReserveFor(ctx, in.UserID, in.OrderID, it.SKU, it.Quantity)
	}
	if len(in.Items) != 1 {
		return flashsale.Reservation{}, fmt.Errorf("order %s: %w: a waitlist offer has exactly one item",
			in.OrderID, &flashsale.Error{Code: flashsale.Invalid})
	}
	return a.Stock.TransferTo(ctx, in.UserID, in.FromOrder, in.OrderID, it.SKU, it.Quantity)
}

// OfferToWaitlist pops the first user waiting for the SKU and records that
// the released order's units are theirs. A retry returns the same user (the
// record is keyed by the released order), so a lost reply never skips a
// waiting buyer or offers one unit twice.
func (a *Activities) OfferToWaitlist(ctx context.Context, in contract.OfferToWaitlistInput) (contract.OfferToWaitlistResult, error) {
	user, err := a.Stock.PopWaitlist(ctx, in.SKU, in.ReleasedOrderID)
	if err != nil {
		return contract.OfferToWaitlistResult{}, fmt.Errorf("offer units of order %s to the waitlist: %w", in.ReleasedOrderID, err)
	}
	if user == "" {
		return contract.OfferToWaitlistResult{}, nil
	}
	return contract.OfferToWaitlistResult{UserID: user, UserDigest: flashsale.UserIDDigest(a.UserIDKey, user)}, nil
}
