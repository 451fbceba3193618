package orderdb

// Money for an order: captured exactly once per transaction id, or recorded
// for refund when the order cannot take it.

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/flashsale/flashsale"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// ConfirmPayment applies money received for an order, exactly once per
// transaction id, with the order row locked:
//
//   - txnID already recorded for this order: its recorded outcome,
//     Duplicate=true, no change.
//   - txnID already recorded for another order: a *TransactionConflictError
//     (TransactionConflict), nothing written, this order unchanged.
//   - order PENDING_PAYMENT and amount equal: payment CAPTURED, frozen ->
//     sold for every item (SELL journal), order PAID.
//   - order PENDING_PAYMENT and amount different: AmountMismatch, nothing
//     written (the caller decides whether to record a refund).
//   - order already PAID by another transaction, EXPIRED or CANCELLED: the
//     payment is recorded as REFUND_REQUIRED with the reason, and returned
//     without error; the caller checks Payment.Status.
//   - unknown order: OrderNotFound, nothing written (see RecordRefund).
//
// A payment that arrives after PayBy but before CloseOrder ran is captured:
// the order workflow's CloseOrder, not the clock, decides expiry, and the
// order lock makes exactly one of the two win.
//
// A database answer that no retry can change is Permanent (classify).
func (s *Store) ConfirmPayment(ctx context.Context, orderID, txnID string, amount int64) (PaymentResult, error) {
	if err := flashsale.CheckID("order_id", orderID, flashsale.MaxIDLength); err != nil {
		return PaymentResult{}, fmt.Errorf("confirm payment %s for order %s: %w", txnID, orderID, err)
	}
	if err := flashsale.CheckID("transaction_id", txnID, flashsale.MaxTransactionIDLength); err != nil {
		return PaymentResult{}, fmt.Errorf("confirm payment %s for order %s: %w", txnID, orderID, err)
	}
	if amount < 0 {
		return PaymentResult{}, fmt.Errorf("confirm payment %s for order %s: %w", txnID, orderID, invalidf("amount %d is negative", amount))
	}

	var res PaymentResult
	// A duplicate key on the payment insert means a concurrent RecordRefund
	// stored this transaction id first; the rerun reports it as a duplicate.
	err := s.writeTx(ctx, isDuplicateKey, func(tx *gorm.DB) error {
		res = PaymentResult{}
		ord, err := lockOrder(tx, orderID)
		if err != nil {
			return err
		}
		items, err := loadItems(tx, orderID)
		if err != nil {
			return err
		}
		pays, err := loadPayments(tx, orderID)
		if err != nil {
			return err
		}

		var prior paymentRow
		err = tx.Where("transaction_id = ?", txnID).Take(&prior).Error
		switch {
		case err == nil:
			if prior.OrderID != orderID {
				// The money is the other order's; this order must stay
				// as it is and payable with a transaction of its own.
				return &TransactionConflictError{TransactionID: txnID, OrderID: orderID, RecordedFor: prior.OrderID}
			}
			res = PaymentResult{Order: toOrder(ord, items, pays), Payment: prior.toPayment(), Duplicate: true}
			return nil
		case !errors.Is(err, gorm.ErrRecordNotFound):
			return err
		}

		ts := now()
		pay := paymentRow{TransactionID: txnID, OrderID: orderID, Amount: amount, CreatedAt: ts}
		switch flashsale.Status(ord.Status) {
		case flashsale.StatusPendingPayment:
			if amount != ord.Amount {
				return fmt.Errorf("paid %d, order amount %d: %w", amount, ord.Amount, flashsale.Errorf(flashsale.AmountMismatch, "amount mismatch"))
			}
			pay.Status = string(flashsale.PaymentCaptured)
			if err := tx.Create(&pay).Error; err != nil {
				return err
			}
			upd := tx.Model(&orderRow{}).
				Where("order_id = ? AND status = ?", orderID, flashsale.StatusPendingPayment).
				UpdateColumns(map[string]any{"status": flashsale.StatusPaid, "updated_at": ts})
			if upd.Error != nil {
				return upd.Error
			}
			if upd.RowsAffected != 1 {
				// Impossible while we hold the row lock; fail loudly rather
				// than commit stock moves for an order that did not change.
				return fmt.Errorf("order changed under lock")
			}
			// The SKUs' rows last, so their locks are held the least (apply).
			move := s.moveFrozen
			if ord.Deferred {
				move = s.sellAvailable
			}
			if err := move(tx, orderID, items, journalSell, "paid by "+txnID, ts, false); err != nil {
				return err
			}
			ord.Status, ord.UpdatedAt = string(flashsale.StatusPaid), ts
		case flashsale.StatusPaid:
			pay.Status = string(flashsale.PaymentRefundRequired)
			pay.Reason = "order already paid"
			for _, p := range pays {
				if p.Status == string(flashsale.PaymentCaptured) {
					pay.Reason = "order already paid by transaction " + p.TransactionID
					break
				}
			}
		case flashsale.StatusExpired, flashsale.StatusCancelled:
			pay.Status = string(flashsale.PaymentRefundRequired)
			pay.Reason = "order " + ord.Status
			if ord.Reason != "" {
				pay.Reason += ": " + ord.Reason
			}
		default:
			return fmt.Errorf("order has unknown status %q", ord.Status)
		}
		pay.Reason = truncate(pay.Reason, flashsale.MaxReasonLength)
		if pay.Status == string(flashsale.PaymentRefundRequired) {
			if err := tx.Create(&pay).Error; err != nil {
				return err
			}
		}
		res = PaymentResult{Order: toOrder(ord, items, append(pays, pay)), Payment: pay.toPayment()}
		return nil
	})
	if errors.Is(err, errNoUnit) {
		// A deferred order's payment found no unit left: nothing moved,
		// and the money is recorded for refund, once (the transaction id
		// is unique), in the order the payments took the SKU's row. The
		// order stays open for its workflow to close.
		pay, rerr := s.RecordRefund(ctx, Payment{TransactionID: txnID, OrderID: orderID, Amount: amount,
			Status: flashsale.PaymentRefundRequired, Reason: string(flashsale.SoldOut)})
		if rerr != nil {
			return PaymentResult{}, fmt.Errorf("confirm payment %s for order %s: no unit left: %w", txnID, orderID, rerr)
		}
		o, rerr := s.Order(ctx, orderID)
		if rerr != nil {
			return PaymentResult{}, fmt.Errorf("confirm payment %s for order %s: no unit left: %w", txnID, orderID, rerr)
		}
		return PaymentResult{Order: o, Payment: pay}, nil
	}
	if err != nil {
		return PaymentResult{}, fmt.Errorf("confirm payment %s for order %s: %w", txnID, orderID, err)
	}
	return res, nil
}

// errNoUnit: a deferred order's payment found fewer units available than
// it wants (sellAvailable); its transaction rolls back.
var errNoUnit = errors.New("no unit left for a deferred order")

// sellAvailable is moveFrozen for a deferred order (NewOrder.Deferred):
// its units go available -> sold on the SKU's inventory row, whose WHERE
// available >= qty is the oversell guard; errNoUnit when it has too few.
func (s *Store) sellAvailable(tx *gorm.DB, orderID string, items []orderItemRow, typ, reason string, ts time.Time, _ bool) error {
	for _, it := range items {
		moved, err := s.apply(tx, stockMove{sku: it.SKUID, dAvail: -it.Quantity, dSold: it.Quantity, ref: orderID, typ: typ,
			reason: truncate(reason, flashsale.MaxReasonLength), at: ts})
		if err != nil {
			return fmt.Errorf("%s: %w", typ, err)
		}
		if !moved {
			// The SKU's units may sit on its bucket rows (a restock or a
			// resize split them): gathered onto its row if they are enough.
			invs, rows, err := readForCreate(tx, []string{it.SKUID})
			if err != nil {
				return err
			}
			item := flashsale.Item{SKU: it.SKUID, Quantity: it.Quantity}
			if err := s.gatherFor(tx, invs[it.SKUID], rows[it.SKUID], item, orderID, ts); err != nil {
				if flashsale.ErrorCode(err) == flashsale.StockDrift {
					return fmt.Errorf("sku %s: %w", it.SKUID, errNoUnit)
				}
				return err
			}
			if moved, err = s.apply(tx, stockMove{sku: it.SKUID, dAvail: -it.Quantity, dSold: it.Quantity, ref: orderID, typ: typ,
				reason: truncate(reason, flashsale.MaxReasonLength), at: ts}); err != nil || !moved {
				return cmp.Or(err, fmt.Errorf("sku %s: %w", it.SKUID, errNoUnit))
			}
		}
	}
	return nil
}

// RecordRefund records money that arrived for an order that cannot take it
// (closed, rejected, unknown) as REFUND_REQUIRED, whatever p.Status says. It
// is exactly-once per transaction id: a repeat returns the row already
// stored, which may be CAPTURED if ConfirmPayment took that transaction, so
// the caller must look at the returned Status before refunding. Inventory is
// never touched.
//
// When the transaction id is stored for another order, nothing is recorded
// for p.OrderID and the error is a *TransactionConflictError
// (TransactionConflict): that row is the other order's money, and
// answering "refund" for it would refund the other order's sale. A database
// answer that no retry can change is Permanent.
func (s *Store) RecordRefund(ctx context.Context, p Payment) (Payment, error) {
	if err := flashsale.CheckID("transaction_id", p.TransactionID, flashsale.MaxTransactionIDLength); err != nil {
		return Payment{}, fmt.Errorf("record refund %s for order %s: %w", p.TransactionID, p.OrderID, err)
	}
	if err := flashsale.CheckID("order_id", p.OrderID, flashsale.MaxIDLength); err != nil {
		return Payment{}, fmt.Errorf("record refund %s for order %s: %w", p.TransactionID, p.OrderID, err)
	}
	if p.Amount < 0 {
		return Payment{}, fmt.Errorf("record refund %s for order %s: %w", p.TransactionID, p.OrderID, invalidf("amount %d is negative", p.Amount))
	}
	row := paymentRow{
		TransactionID: p.TransactionID,
		OrderID:       p.OrderID,
		Amount:        p.Amount,
		Status:        string(flashsale.PaymentRefundRequired),
		Reason:        truncate(p.Reason, flashsale.MaxReasonLength),
		CreatedAt:     now(),
	}
	db := s.db.WithContext(ctx)
	// ON DUPLICATE KEY UPDATE id=id instead of INSERT IGNORE: IGNORE would
	// also turn CHECK and data errors into warnings. The row is then read
	// back rather than trusting the affected-rows count, which MariaDB's
	// INSERT ... RETURNING (used by GORM) does not report for a no-op.
	if err := db.Clauses(clause.OnConflict{DoNothing: true}).Create(&row).Error; err != nil {
		return Payment{}, fmt.Errorf("record refund %s for order %s: %w", p.TransactionID, p.OrderID, classify(err, nil))
	}
	var stored paymentRow
	if err := db.Where("transaction_id = ?", p.TransactionID).Take(&stored).Error; err != nil {
		return Payment{}, fmt.Errorf("record refund %s for order %s: %w", p.TransactionID, p.OrderID, classify(err, nil))
	}
	if stored.OrderID != p.OrderID {
		return Payment{}, fmt.Errorf("record refund %s for order %s: %w", p.TransactionID, p.OrderID,
			&TransactionConflictError{TransactionID: p.TransactionID, OrderID: p.OrderID, RecordedFor: stored.OrderID})
	}
	return stored.toPayment(), nil
}
