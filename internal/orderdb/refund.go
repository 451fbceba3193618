package orderdb

// One paid order refunded: by a void of its sale (RefundOrder) or by an
// operator (RefundPaidOrder), and the money owed back marked sent
// (MarkRefunded).

import (
	"context"
	"errors"
	"fmt"

	"github.com/flashsale/flashsale"

	"gorm.io/gorm"
)

// RefundResult is what a refund of a paid order did.
type RefundResult struct {
	Order Order `json:"order"`
	// Refunded: this call refunded the order. False: an earlier call did,
	// and this is its result.
	Refunded bool `json:"refunded"`
	// Restocked: the units went from sold back to available. False: they
	// were written off (sold and total down): the buyer keeps them, or
	// they cannot be sold again.
	Restocked bool `json:"restocked"`
}

// RefundPaidOrder refunds one PAID order, as RefundOrder does for a void
// (the order CANCELLED with reason, its captured money REFUND_REQUIRED, a
// REFUND journal entry per line), with the units back to available when
// restock is set and written off otherwise. It works after the sale ended
// too.
//
// Exactly once: the order's compare-and-set from PAID decides, under the
// order lock. A repeat answers the first refund's result (Refunded false,
// Restocked as the first said), whatever restock it asks. An order closed
// unpaid is OrderClosed, one still PENDING_PAYMENT Invalid (it is
// cancelled, not refunded), an unknown one OrderNotFound.
//
// The caller gives restocked units back to Redis while the SKU is on sale
// (inventory.Store.Release, once per order), after this commits.
func (s *Store) RefundPaidOrder(ctx context.Context, orderID, reason string, restock bool) (RefundResult, error) {
	res, err := s.refund(ctx, orderID, reason, restock)
	if err == nil && !res.Refunded && !res.hadRefund {
		return RefundResult{}, fmt.Errorf("refund order %s: %w", orderID,
			flashsale.Errorf(flashsale.OrderClosed, "order %s closed unpaid: nothing to refund", res.Order.Status))
	}
	return res.RefundResult, err
}

type refundOutcome struct {
	RefundResult
	// hadRefund: the order was refunded before (it has REFUND entries).
	hadRefund bool
}

func (s *Store) refund(ctx context.Context, orderID, reason string, restock bool) (refundOutcome, error) {
	if err := flashsale.CheckID("order_id", orderID, flashsale.MaxIDLength); err != nil {
		return refundOutcome{}, fmt.Errorf("refund order %s: %w", orderID, err)
	}
	reason = truncate(reason, flashsale.MaxReasonLength)
	var out refundOutcome
	err := s.writeTx(ctx, nil, func(tx *gorm.DB) error {
		out = refundOutcome{}
		ord, err := lockOrder(tx, orderID)
		if err != nil {
			return err
		}
		items, err := loadItems(tx, orderID)
		if err != nil {
			return err
		}
		switch flashsale.Status(ord.Status) {
		case flashsale.StatusPaid:
		case flashsale.StatusPendingPayment:
			return invalidf("order is %s: an unpaid order is cancelled, not refunded", ord.Status)
		default:
			pays, err := loadPayments(tx, orderID)
			if err != nil {
				return err
			}
			out.Order = toOrder(ord, items, pays)
			return priorRefund(tx, orderID, &out)
		}
		ts := now()
		upd := tx.Model(&orderRow{}).
			Where("order_id = ? AND status = ?", orderID, flashsale.StatusPaid).
			UpdateColumns(map[string]any{"status": flashsale.StatusCancelled, "reason": reason, "closed_at": ts, "updated_at": ts})
		if upd.Error != nil {
			return upd.Error
		}
		if upd.RowsAffected != 1 {
			return fmt.Errorf("order changed under lock")
		}
		if err := tx.Model(&paymentRow{}).
			Where("order_id = ? AND status = ?", orderID, flashsale.PaymentCaptured).
			UpdateColumns(map[string]any{"status": flashsale.PaymentRefundRequired,
				"reason": truncate("captured, then refunded: "+reason, flashsale.MaxReasonLength)}).Error; err != nil {
			return err
		}
		pays, err := loadPayments(tx, orderID)
		if err != nil {
			return err
		}
		if restock {
			// Units written off stay the buyer's against the limit.
			if err := giveHoldings(tx, ord.UserID, items); err != nil {
				return err
			}
		}
		// The SKUs' rows last, so their locks are held the least (apply).
		for _, it := range items {
			m := stockMove{sku: it.SKUID, bucket: it.Bucket, dSold: -it.Quantity,
				ref: orderID, typ: journalRefund, reason: "refunded: " + reason, at: ts}
			if restock {
				// A degraded order's units never left Redis's count
				// through a marker, so Redis cannot take them back by
				// releasing one: the SKU is re-synced instead.
				m.dAvail, m.resync = it.Quantity, ord.Degraded
			} else {
				m.dTotal = -it.Quantity
				m.reason = "refunded, written off: " + reason
			}
			moved, err := s.apply(tx, m)
			if err != nil {
				return fmt.Errorf("%s: %w", journalRefund, err)
			}
			if !moved {
				return fmt.Errorf("%s sku %s: fewer than %d units sold: inventory out of step with orders", journalRefund, it.SKUID, it.Quantity)
			}
		}
		ord.Status, ord.Reason, ord.ClosedAt, ord.UpdatedAt = string(flashsale.StatusCancelled), reason, &ts, ts
		out.Order, out.Refunded, out.Restocked, out.hadRefund = toOrder(ord, items, pays), true, restock, true
		return nil
	})
	if err != nil {
		return refundOutcome{}, fmt.Errorf("refund order %s: %w", orderID, err)
	}
	return out, nil
}

// priorRefund reads how an earlier refund of the order went from its
// REFUND entries.
func priorRefund(tx *gorm.DB, orderID string, out *refundOutcome) error {
	var r struct {
		Entries   int64
		Available int64
	}
	if err := tx.Raw(`SELECT COUNT(*) AS entries, COALESCE(SUM(delta_available), 0) AS available
		FROM inventory_journal WHERE ref_id = ? AND type = ?`, orderID, journalRefund).Scan(&r).Error; err != nil {
		return err
	}
	out.hadRefund, out.Restocked = r.Entries > 0, r.Available > 0
	return nil
}

// MarkRefunded records that money owed back (REFUND_REQUIRED) has been
// sent back: the payment becomes REFUNDED, with ref (the provider's refund
// id) in its reason. Idempotent: a REFUNDED payment is answered as it is.
// A CAPTURED payment is OrderClosed (its order is paid: refund it first, which
// makes it owed), an unknown transaction OrderNotFound.
func (s *Store) MarkRefunded(ctx context.Context, txnID, ref string) (Payment, error) {
	if err := flashsale.CheckID("transaction_id", txnID, flashsale.MaxTransactionIDLength); err != nil {
		return Payment{}, fmt.Errorf("mark %s refunded: %w", txnID, err)
	}
	var out Payment
	err := s.writeTx(ctx, nil, func(tx *gorm.DB) error {
		var p paymentRow
		err := tx.Clauses(forUpdate).Where("transaction_id = ?", txnID).Take(&p).Error
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return flashsale.Errorf(flashsale.OrderNotFound, "no payment %s", txnID)
		}
		if err != nil {
			return err
		}
		switch flashsale.PaymentStatus(p.Status) {
		case flashsale.PaymentRefunded:
		case flashsale.PaymentCaptured:
			return flashsale.Errorf(flashsale.OrderClosed, "payment %s paid its order: refund the order first", txnID)
		default:
			p.Status = string(flashsale.PaymentRefunded)
			if ref != "" {
				p.Reason = truncate(p.Reason+"; refunded as "+ref, flashsale.MaxReasonLength)
			}
			if err := tx.Model(&paymentRow{}).Where("id = ?", p.ID).
				UpdateColumns(map[string]any{"status": p.Status, "reason": p.Reason}).Error; err != nil {
				return err
			}
		}
		out = p.toPayment()
		return nil
	})
	if err != nil {
		return Payment{}, fmt.Errorf("mark %s refunded: %w", txnID, err)
	}
	return out, nil
}
