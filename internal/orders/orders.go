// Package orders is the client side of the order workflow: placing an order
// with Update-with-Start, paying, cancelling and reading it. The starter CLI
// and the HTTP API both go through it, so they behave the same way on
// duplicates, late payments and closed orders.
//
// Every refusal is a *flashsale.Error: Invalid (the order or payment fails
// its one validation), OrderNotFound, OrderClosed, OrderIDConflict, and
// Unavailable when Temporal did not answer in time (nothing changed; retry
// as it is). Callers branch on flashsale.ErrorCode(err).
package orders

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/internal/orderdb"
)

// Service places and manages orders.
type Service struct {
	Temporal  client.Client
	TaskQueue string
	// Orders is the database, used for payments that reach an order whose
	// workflow has already completed.
	Orders *orderdb.Store
	// Priority is the task-queue priority of the orders it starts (zero:
	// the server's default). Every task of an order's workflow carries it.
	Priority temporal.Priority
	// FairnessBySKU gives each order the fairness key of its first SKU, so
	// a server with matching.enableFairness dispatches the task queue's
	// tasks round-robin by SKU: a hot SKU's backlog does not hold a cold
	// SKU's orders and payments (config.Config.FairnessBySKU).
	FairnessBySKU bool
	// Logger notes what a caller is not told (a receipt that could not be
	// written); nil means slog.Default().
	Logger *slog.Logger
	// UserIDKey keys the hash of the buyer's id kept in Temporal's
	// visibility (config.Config.UserIDKey, flashsale.UserIDDigest).
	UserIDKey []byte
}

// UserDigest is userID as Temporal's visibility holds it (the UserId
// search attribute): its keyed hash, never the id itself.
func (s *Service) UserDigest(userID string) string {
	return flashsale.UserIDDigest(s.UserIDKey, userID)
}

func (s *Service) logger() *slog.Logger {
	if s.Logger == nil {
		return slog.Default()
	}
	return s.Logger
}

// notFound is the refusal of an order id no workflow has (or the caller
// may not see).
func notFound(orderID string) error {
	return fmt.Errorf("order %s: %w", orderID, &flashsale.Error{Code: flashsale.OrderNotFound, Message: "order not found"})
}

// closed is the refusal of a change to an order that can no longer change.
func closed(orderID string, status flashsale.Status) error {
	return fmt.Errorf("order %s is %s: %w", orderID, status,
		&flashsale.Error{Code: flashsale.OrderClosed, Message: "order already paid, expired, cancelled or rejected"})
}

// idConflict is the refusal of an order id that is another buyer's order.
func idConflict(orderID string) error {
	return fmt.Errorf("order %s: %w", orderID,
		&flashsale.Error{Code: flashsale.OrderIDConflict, Message: "order id already used by another order"})
}

// temporalErr wraps a failed Temporal call with its operation, coding
// Temporal's own "did not answer" (overloaded, unreachable, out of time) as
// Unavailable: nothing changed, and the caller may retry as it is.
func temporalErr(op string, err error) error {
	return fmt.Errorf("%s: %w", op, CodeDown(err))
}

// CodeDown codes err Unavailable when it is Temporal's own "did not answer"
// (TemporalDown), keeping err wrapped; any other error passes as it is.
// Every Temporal call outside this package (dialing the client, the
// catalog's sale control) answers through it, so every door reads one
// code.
func CodeDown(err error) error {
	if err == nil || !TemporalDown(err) || flashsale.ErrorCode(err) != flashsale.Internal {
		return err
	}
	return fmt.Errorf("%w: %w", &flashsale.Error{Code: flashsale.Unavailable, Message: "order service unavailable"}, err)
}

// TemporalDown recognises Temporal's own "did not answer": the frontend
// unreachable or overloaded, the call out of time, or the workflow not
// ready for an update or query because its last workflow task failed (a
// worker overloaded or restarting: the task is retried and the workflow
// goes on). Nothing was decided by the call, so it may be retried as it
// is: an order placed meanwhile answers the retry with the same key.
func TemporalDown(err error) bool {
	if _, ok := errors.AsType[*serviceerror.Unavailable](err); ok {
		return true
	}
	if _, ok := errors.AsType[*serviceerror.WorkflowNotReady](err); ok {
		return true
	}
	if _, ok := errors.AsType[*serviceerror.DeadlineExceeded](err); ok {
		return true
	}
	if _, ok := errors.AsType[*serviceerror.ResourceExhausted](err); ok {
		return true
	}
	return errors.Is(err, context.DeadlineExceeded)
}

// isNotFound recognises the server's answer for a workflow that does not
// exist, and also for an update or signal sent to one that has completed
// ("workflow execution already completed").
func isNotFound(err error) bool {
	_, ok := errors.AsType[*serviceerror.NotFound](err)
	return ok
}
