package httpapi

import (
	"context"
	"database/sql/driver"
	"errors"
	"math"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
	"go.temporal.io/api/serviceerror"

	"github.com/flashsale/flashsale/internal/edge"
	"github.com/flashsale/flashsale/internal/inventory"
	"github.com/flashsale/flashsale/internal/orderdb"
	"github.com/flashsale/flashsale/internal/orders"
	"github.com/flashsale/flashsale/workflows"
)

// Error codes the API answers with. Stable: clients branch on them.
const (
	codeInvalid         = "INVALID_REQUEST"
	codeTooLarge        = "PAYLOAD_TOO_LARGE"
	codeUnauthorized    = "UNAUTHORIZED"
	codeBadSignature    = "BAD_SIGNATURE"
	codeNotFound        = "NOT_FOUND"
	codeMethod          = "METHOD_NOT_ALLOWED"
	codeUnknownSKU      = "UNKNOWN_SKU"
	codeOrderNotFound   = "ORDER_NOT_FOUND"
	codeSoldOut         = "SOLD_OUT"
	codeOrderClosed     = "ORDER_CLOSED"
	codeOrderIDConflict = "ORDER_ID_CONFLICT"
	codeSKUInUse        = "SKU_IN_USE"
	codePreheatMismatch = "PREHEAT_MISMATCH"
	codeResizeBusy      = "RESIZE_IN_PROGRESS"
	codeLimitExceeded   = "LIMIT_EXCEEDED"
	codeAmountMismatch  = "AMOUNT_MISMATCH"
	codeRateLimited     = "RATE_LIMITED"
	codeBusy            = "BUSY"
	codeUnavailable     = "UNAVAILABLE"
	codeInternal        = "INTERNAL"
	codeNotSoldOut      = "NOT_SOLD_OUT"
	// Buyer identity (internal/identity) and the waitlist's bounds.
	codeUnauthenticated     = "UNAUTHENTICATED"
	codeUserMismatch        = "USER_MISMATCH"
	codeWaitlistFull        = "WAITLIST_FULL"
	codeNotOnWaitlist       = "NOT_ON_WAITLIST"
	codeTransactionConflict = "TRANSACTION_CONFLICT"
)

// apiError is an answer the client may see in full. Handlers return it for
// failures they have already put into words (bad input); everything else
// goes through classify.
type apiError struct {
	Status     int
	Code       string
	Message    string
	RetryAfter time.Duration
	// challenge is the WWW-Authenticate header of a 401.
	challenge string
}

func (e *apiError) Error() string { return e.Code + ": " + e.Message }

func invalid(msg string) error {
	return &apiError{Status: http.StatusBadRequest, Code: codeInvalid, Message: msg}
}

// unavailableRetry is the Retry-After of a 503: dependencies recover in
// seconds or not at all, and clients retrying at once only add load.
const unavailableRetry = 2 * time.Second

// classify turns any error into what the client sees. It is the only place
// that maps errors to statuses. Messages are fixed per code: the error's own
// text (ids, SQL, hosts) stays in the log. Anything unrecognised is a 500
// with a generic message.
func classify(err error) *apiError {
	if ae, ok := errors.AsType[*apiError](err); ok {
		return ae
	}
	e := func(status int, code, msg string) *apiError {
		return &apiError{Status: status, Code: code, Message: msg}
	}
	var retryAfter time.Duration
	if re, ok := errors.AsType[*edge.RetryError](err); ok {
		retryAfter = re.After
	}
	if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
		return e(http.StatusRequestEntityTooLarge, codeTooLarge, "request body larger than 64 KiB")
	}
	switch {
	case errors.Is(err, edge.ErrRateLimited):
		return &apiError{Status: http.StatusTooManyRequests, Code: codeRateLimited,
			Message: "too many buy requests from this user; retry later", RetryAfter: retryAfter}
	case errors.Is(err, edge.ErrBusy):
		return &apiError{Status: http.StatusTooManyRequests, Code: codeBusy,
			Message: "units remain but many buyers are ahead of you; retry shortly", RetryAfter: retryAfter}
	case errors.Is(err, inventory.ErrNotSoldOut):
		return e(http.StatusConflict, codeNotSoldOut, "units are on sale; buy one instead of waiting")
	case errors.Is(err, inventory.ErrWaitlistFull):
		return e(http.StatusConflict, codeWaitlistFull, "the waitlist of this sku is full")
	case errors.Is(err, inventory.ErrNotWaiting):
		return e(http.StatusNotFound, codeNotOnWaitlist, "you are not on this sku's waitlist and hold no offer from it")
	case errors.Is(err, edge.ErrSoldOut):
		return e(http.StatusConflict, codeSoldOut, "sold out")
	case errors.Is(err, edge.ErrUnknownSKU), errors.Is(err, orderdb.ErrUnknownSKU), errors.Is(err, inventory.ErrUnknownSKU):
		return e(http.StatusNotFound, codeUnknownSKU, "unknown sku")
	case errors.Is(err, edge.ErrIDConflict), errors.Is(err, orders.ErrIDConflict):
		return e(http.StatusConflict, codeOrderIDConflict, "order id already used by another order")
	case errors.Is(err, orders.ErrNotFound), errors.Is(err, orderdb.ErrNotFound):
		return e(http.StatusNotFound, codeOrderNotFound, "order not found")
	case errors.Is(err, orders.ErrClosed):
		return e(http.StatusConflict, codeOrderClosed, "order already paid, expired, cancelled or rejected")
	case errors.Is(err, orderdb.ErrSKUInUse):
		return e(http.StatusConflict, codeSKUInUse, "unpaid orders hold units of this sku; wait for them to close")
	case errors.Is(err, inventory.ErrResizeBusy):
		return e(http.StatusConflict, codeResizeBusy, "another bucket resize of this sku is running; retry when it ends")
	case errors.Is(err, inventory.ErrPreheatMismatch):
		return e(http.StatusConflict, codePreheatMismatch, "redis stock does not match the database after preheat; retry when no sale is running")
	case errors.Is(err, orders.ErrInvalid), errors.Is(err, orderdb.ErrInvalidArgument), errors.Is(err, inventory.ErrInvalidArgument):
		// Input validation runs before any of these layers, so this is
		// rare (e.g. a restock request id reused with another quantity).
		return e(http.StatusBadRequest, codeInvalid, "request refused as invalid")
	case dependencyDown(err):
		return &apiError{Status: http.StatusServiceUnavailable, Code: codeUnavailable,
			Message: "service temporarily unavailable; retry", RetryAfter: unavailableRetry}
	}
	return e(http.StatusInternalServerError, codeInternal, "internal error")
}

// dependencyDown recognises a dependency that did not answer in time or at
// all: Temporal overloaded or unreachable, a dropped Redis or MySQL
// connection, a request out of time. That is a 503 with Retry-After (the
// client may retry; every write is idempotent), not a 500.
func dependencyDown(err error) bool {
	if _, ok := errors.AsType[*serviceerror.Unavailable](err); ok {
		return true
	}
	if _, ok := errors.AsType[*serviceerror.DeadlineExceeded](err); ok {
		return true
	}
	if _, ok := errors.AsType[*serviceerror.ResourceExhausted](err); ok {
		return true
	}
	if _, ok := errors.AsType[net.Error](err); ok {
		return true
	}
	return errors.Is(err, edge.ErrUnavailable) || errors.Is(err, orders.ErrUnavailable) ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) ||
		errors.Is(err, driver.ErrBadConn) || errors.Is(err, redis.ErrPoolTimeout) || errors.Is(err, redis.ErrClosed)
}

// rejection maps a REJECTED reservation's reason to an answer.
func rejection(reason string) *apiError {
	switch reason {
	case workflows.ReasonSoldOut, workflows.ReasonStockDrift:
		// Drift means Redis offered a unit MySQL did not have: to the buyer
		// it is sold out.
		return &apiError{Status: http.StatusConflict, Code: codeSoldOut, Message: "sold out"}
	case workflows.ReasonLimitExceeded:
		return &apiError{Status: http.StatusUnprocessableEntity, Code: codeLimitExceeded,
			Message: "you already hold as many units of this sku as one buyer may"}
	case workflows.ReasonUnknownSKU:
		return &apiError{Status: http.StatusNotFound, Code: codeUnknownSKU, Message: "unknown sku"}
	case workflows.ReasonInvalid:
		return &apiError{Status: http.StatusBadRequest, Code: codeInvalid, Message: "order refused as invalid"}
	case workflows.ReasonUnavailable:
		return &apiError{Status: http.StatusServiceUnavailable, Code: codeUnavailable,
			Message: "stock service unavailable; nothing was reserved, retry", RetryAfter: unavailableRetry}
	}
	return &apiError{Status: http.StatusInternalServerError, Code: codeInternal, Message: "internal error"}
}

// writeError answers with err's code and logs what the client does not see.
// A client that has hung up gets nothing: the failure is its own doing (a
// cancelled request context), the middleware logs it once as 499, and it
// says nothing about Redis, MySQL or Temporal.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	if r.Context().Err() != nil {
		return
	}
	ae := classify(err)
	_, answered := errors.AsType[*apiError](err)
	switch {
	// An apiError is an answer a handler chose (and logged if it mattered);
	// a 5xx from anything else is a failure somebody must look at.
	case ae.Status >= 500 && !answered:
		s.log.ErrorContext(r.Context(), "request failed", "method", r.Method, "path", r.URL.Path,
			"status", ae.Status, "code", ae.Code, "request_id", requestID(r), "error", err)
	default:
		s.log.DebugContext(r.Context(), "request refused", "method", r.Method, "path", r.URL.Path,
			"status", ae.Status, "code", ae.Code, "error", err)
	}
	if ae.challenge != "" {
		w.Header().Set("WWW-Authenticate", ae.challenge)
	}
	if ae.RetryAfter > 0 {
		// Whole seconds, rounded up: "0" would invite an instant retry.
		w.Header().Set("Retry-After", formatSeconds(ae.RetryAfter))
	}
	s.writeJSON(w, r, ae.Status, errorBody{Code: ae.Code, Message: ae.Message})
}

type errorBody struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func formatSeconds(d time.Duration) string {
	secs := max(int64(math.Ceil(d.Seconds())), 1)
	return strconv.FormatInt(secs, 10)
}
