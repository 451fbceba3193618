package orderdb

// Closing an unpaid order: expired or cancelled, its frozen units back to
// available; or abandoned when its creation may not have committed.

import (
	"context"
	"fmt"

	"github.com/flashsale/flashsale"

	"gorm.io/gorm"
)

// CloseOrder ends an unpaid order as EXPIRED or CANCELLED and gives its
// frozen units back to available (RELEASE journal). It is a compare-and-set
// from PENDING_PAYMENT under the order lock, so it can never release units of
// an order a concurrent ConfirmPayment has just paid.
//
// Idempotent: an order already in status to is returned unchanged. A PAID
// order gives AlreadyPaid, one closed with the other status OrderClosed,
// an unknown one OrderNotFound. A payment received by its deadline that no
// payments row answers yet gives a *PaymentReceivedError and changes
// nothing (see RecordReceipt).
func (s *Store) CloseOrder(ctx context.Context, orderID string, to flashsale.Status, reason string) (Order, error) {
	return s.closeOrder(ctx, orderID, to, reason, false)
}

// CloseOrderIgnoringReceipts is CloseOrder without the receipt check: for
// an order whose workflow already tried to apply the payment received in
// time and got no answer from the database by its bound. The payment stays
// the workflow's, settled late (a refund) unless it committed after all,
// which this compare-and-set then finds (AlreadyPaid).
func (s *Store) CloseOrderIgnoringReceipts(ctx context.Context, orderID string, to flashsale.Status, reason string) (Order, error) {
	return s.closeOrder(ctx, orderID, to, reason, true)
}

func (s *Store) closeOrder(ctx context.Context, orderID string, to flashsale.Status, reason string, ignoreReceipts bool) (Order, error) {
	if err := flashsale.CheckID("order_id", orderID, flashsale.MaxIDLength); err != nil {
		return Order{}, fmt.Errorf("close order %s: %w", orderID, err)
	}
	if to != flashsale.StatusExpired && to != flashsale.StatusCancelled {
		return Order{}, fmt.Errorf("close order %s: %w", orderID, invalidf("target status %q is not EXPIRED or CANCELLED", to))
	}
	reason = truncate(reason, flashsale.MaxReasonLength)

	var out Order
	err := s.writeTx(ctx, nil, func(tx *gorm.DB) error {
		ord, err := lockOrder(tx, orderID)
		if err != nil {
			return err
		}
		switch flashsale.Status(ord.Status) {
		case to:
			out, err = loadOrder(tx, ord)
			return err
		case flashsale.StatusPaid:
			return flashsale.Errorf(flashsale.AlreadyPaid, "order already paid")
		case flashsale.StatusExpired, flashsale.StatusCancelled:
			return fmt.Errorf("already %s: %w", ord.Status, flashsale.Errorf(flashsale.OrderClosed, "order closed"))
		case flashsale.StatusPendingPayment:
		default:
			return fmt.Errorf("order has unknown status %q", ord.Status)
		}
		// Money that reached us in time but not yet the order (Temporal
		// could not deliver it before the deadline) keeps the order open:
		// the workflow applies it instead of closing. Checked under the
		// order lock, so a receipt is either seen here or recorded after
		// the order closed (and then answered as late money).
		if !ignoreReceipts {
			r, err := unansweredReceipt(tx, orderID, ord.PayBy)
			if err != nil {
				return err
			}
			if r != nil {
				return &PaymentReceivedError{Receipt: *r}
			}
		}

		items, err := loadItems(tx, orderID)
		if err != nil {
			return err
		}
		pays, err := loadPayments(tx, orderID)
		if err != nil {
			return err
		}
		ts := now()
		upd := tx.Model(&orderRow{}).
			Where("order_id = ? AND status = ?", orderID, flashsale.StatusPendingPayment).
			UpdateColumns(map[string]any{"status": to, "reason": reason, "closed_at": ts, "updated_at": ts})
		if upd.Error != nil {
			return upd.Error
		}
		if upd.RowsAffected != 1 {
			return fmt.Errorf("order changed under lock")
		}
		if err := giveHoldings(tx, ord.UserID, items); err != nil {
			return err
		}
		// The SKUs' rows last, so their locks are held the least (apply).
		frozen := items
		if ord.Deferred {
			// A deferred order froze nothing: nothing goes back.
			frozen = nil
		}
		if err := s.moveFrozen(tx, orderID, frozen, journalRelease, string(to)+": "+reason, ts, ord.Degraded); err != nil {
			return err
		}
		ord.Status, ord.Reason, ord.ClosedAt, ord.UpdatedAt = string(to), reason, &ts, ts
		out = toOrder(ord, items, pays)
		return nil
	})
	if err != nil {
		return Order{}, fmt.Errorf("close order %s: %w", orderID, err)
	}
	return out, nil
}

// AbandonOrder ends an order whose creation failed past its budget and so
// may or may not have committed: an existing PENDING_PAYMENT order is
// closed as CANCELLED (CloseOrder, units back to available); a missing one
// gets a tombstone, a CANCELLED order row without items. A CreateOrder
// attempt of the same id still in flight (its COMMIT delayed in a network
// that has just come back) then fails on the unique order id and rolls its
// stock moves back, instead of committing an order nobody will pay, expire
// or release. Idempotent: a repeat finds the order or tombstone closed.
func (s *Store) AbandonOrder(ctx context.Context, orderID, reason string) (Order, error) {
	o, err := s.CloseOrder(ctx, orderID, flashsale.StatusCancelled, reason)
	if flashsale.ErrorCode(err) != flashsale.OrderNotFound {
		return o, err
	}
	ts := now()
	tomb := orderRow{
		OrderID: orderID, Status: string(flashsale.StatusCancelled), PayBy: ts,
		Reason:    truncate("never created: "+reason, flashsale.MaxReasonLength),
		CreatedAt: ts, UpdatedAt: ts, ClosedAt: &ts,
	}
	err = s.db.WithContext(ctx).Create(&tomb).Error
	switch {
	case isDuplicateKey(err):
		// The late CreateOrder committed between the two statements:
		// close it like any other.
		return s.CloseOrder(ctx, orderID, flashsale.StatusCancelled, reason)
	case err != nil:
		return Order{}, fmt.Errorf("abandon order %s: write tombstone: %w", orderID, classify(err, nil))
	}
	return toOrder(tomb, nil, nil), nil
}
