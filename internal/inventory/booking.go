package inventory

import (
	"context"
	"fmt"

	"github.com/flashsale/flashsale"
)

// Bookings: a SKU that deducts at payment (flashsale.DeductPayment) takes
// no unit when an order is placed, only a booking, so its open orders are
// bounded by its stock times its overbooking factor; the unit is taken
// (Reserve) when the payment is applied. The count of bookings left sits
// in the SKU's slot beside its bucket count, so the edge reads it with the
// stock (AvailableTo) and refuses a buy once none is left, before any
// workflow starts.

func bookingsKey(sku string) string         { return "fs:{sku:" + sku + "}:bookings" }
func bookingKey(sku, orderID string) string { return "fs:{sku:" + sku + "}:booking:" + orderID }

// bookScript, unbookScript: book.lua, unbook.lua.
var (
	bookScript   = script("book.lua")
	unbookScript = script("unbook.lua")
)

// SetBookings sets how many bookings sku has left (its stock times its
// overbooking factor), before its sale; n <= 0 removes the count, and the
// SKU deducts when orders are placed.
func (s *Store) SetBookings(ctx context.Context, sku string, n int64) (err error) {
	defer codeOutage(&err)
	if err := validateSKU(sku); err != nil {
		return fmt.Errorf("set bookings of %s: %w", sku, err)
	}
	if n <= 0 {
		return s.rdb.Del(ctx, bookingsKey(sku)).Err()
	}
	return s.rdb.Set(ctx, bookingsKey(sku), n, 0).Err()
}

// parseBookings reads the bookings count v (an MGET's value of
// bookingsKey): DeductPayment and the bookings left (never below 0) when it
// is there, DeductHold when not, as book.lua tells them apart.
func parseBookings(v any) (flashsale.Deduct, int64, error) {
	if v == nil {
		return flashsale.DeductHold, 0, nil
	}
	left, err := parseInt(v)
	if err != nil {
		return "", 0, fmt.Errorf("bookings: %w", err)
	}
	return flashsale.DeductPayment, max(left, 0), nil
}

// Booking is Book's answer.
type Booking int

const (
	// NotBooked: the SKU takes no bookings; it deducts at the order.
	NotBooked Booking = iota
	// Booked: the order holds its booking (a retry answers it again).
	Booked
	// NoBooking: none left, or the order's was given back already.
	NoBooking
)

// Book takes qty bookings of sku for orderID, once (book.lua).
func (s *Store) Book(ctx context.Context, orderID, sku string, qty int64) (_ Booking, err error) {
	defer codeOutage(&err)
	if err := validateOrder(orderID, sku); err != nil {
		return NoBooking, fmt.Errorf("book %s: %w", sku, err)
	}
	n, err := bookScript.Run(ctx, s.rdb, []string{bookingsKey(sku), bookingKey(sku, orderID)}, qty, s.heldMs).Int64()
	switch {
	case err != nil:
		return NoBooking, fmt.Errorf("book %s for order %s: %w", sku, orderID, err)
	case n == -1:
		return NotBooked, nil
	case n > 0:
		return Booked, nil
	}
	return NoBooking, nil
}

// Unbook gives orderID's booking of sku back, once (unbook.lua).
func (s *Store) Unbook(ctx context.Context, orderID, sku string) (err error) {
	defer codeOutage(&err)
	if err := validateOrder(orderID, sku); err != nil {
		return fmt.Errorf("unbook %s: %w", sku, err)
	}
	if err := unbookScript.Run(ctx, s.rdb, []string{bookingsKey(sku), bookingKey(sku, orderID)}, s.heldMs).Err(); err != nil {
		return fmt.Errorf("unbook %s for order %s: %w", sku, orderID, err)
	}
	return s.bump(ctx, sku)
}
