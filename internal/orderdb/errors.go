package orderdb

import (
	"fmt"

	"github.com/flashsale/flashsale"
)

// The store answers with *flashsale.Error values, wrapped with the
// operation and ids; a caller branches on flashsale.ErrorCode(err):
//
//   - OrderNotFound, UnknownSKU: no such row.
//   - StockDrift: MySQL has fewer available units than Redis let through
//     (Redis drifted and must be reconciled).
//   - OrderClosed, AlreadyPaid: the order can no longer take this change.
//   - AmountMismatch, LimitExceeded (the order would give the user more
//     units of a SKU than its per_user_limit; nothing was written),
//     SKUInUse (unpaid orders hold units of the SKU).
//   - TransactionConflict: the payment's transaction id is recorded for
//     another order (a *TransactionConflictError naming it). Nothing was
//     written for this order, which stays payable with another
//     transaction; the money belongs to the order that recorded it first.
//   - PaymentReceived: a payment received by the deadline is not answered
//     yet (a *PaymentReceivedError, receipts.go).
//   - Invalid: input that can never succeed (an id out of the alphabet or
//     too long for its column, a non-positive quantity, ...). Retrying it
//     is pointless, so a Temporal activity reports it as non-retryable.
//   - Permanent: a database answer that will be the same on every retry (a
//     CHECK constraint, a duplicate key no code path expects, a value out
//     of range or too long, a broken foreign key; see classify). The
//     statement rolled back. It is kept apart from Invalid because the
//     caller's input may be fine: the stored data or the code is wrong, an
//     operator has to look. Temporal activities report it as
//     non-retryable unless they are compensation, which must keep trying.
//     Deadlocks, lock wait timeouts and connection errors are never
//     Permanent.
//   - Unavailable: MySQL could not be reached or did not answer in time
//     (a refused or timed-out dial, a dropped connection, a deadline, a
//     server shutting down; see outage). Nothing is known to have changed;
//     every operation is idempotent, so the caller may retry as it is. A
//     caller's own cancellation is not coded.
//
// An error without a code is the database failing in another way.

// invalidf is an Invalid error: input no retry can make acceptable.
func invalidf(format string, args ...any) error {
	return flashsale.Errorf(flashsale.Invalid, format, args...)
}

// TransactionConflictError is the TransactionConflict of one payment:
// TransactionID was offered for OrderID but is recorded for RecordedFor.
type TransactionConflictError struct {
	TransactionID string
	OrderID       string
	RecordedFor   string
}

func (e *TransactionConflictError) Error() string {
	return fmt.Sprintf("transaction %s is recorded for order %s, not order %s", e.TransactionID, e.RecordedFor, e.OrderID)
}

// Unwrap gives the code: flashsale.ErrorCode(err) is TransactionConflict.
func (e *TransactionConflictError) Unwrap() error {
	return flashsale.Errorf(flashsale.TransactionConflict, "transaction already recorded for another order")
}
