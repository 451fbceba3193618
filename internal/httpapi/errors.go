package httpapi

import (
	"errors"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/internal/edge"
	"github.com/flashsale/flashsale/internal/orders"
	"github.com/flashsale/flashsale/internal/redisguard"
)

// answer is what a client is told for a code: the status, when to retry,
// and the message. An error's own message is shown when this door wrote it
// (refuse) or when the code's messages are written for the client
// (showOwn); otherwise the code's one fixed message is, so ids, SQL and
// hosts in the layers' texts stay in the log.
type answer struct {
	status int
	// message is the code's words; with showOwn, only for an error that
	// has none of its own.
	message string
	showOwn bool
	// as is the code the client sees when it is not the error's own.
	as         flashsale.Code
	retryAfter time.Duration
	// challenge is the WWW-Authenticate header of a 401.
	challenge string
}

// unavailableRetry is the Retry-After of a 503: dependencies recover in
// seconds or not at all, and clients retrying at once only add load.
const unavailableRetry = 2 * time.Second

// answers is the HTTP door's one mapping of codes. A code that is not here
// (and an error without a code) is 500 INTERNAL "internal error".
var answers = map[flashsale.Code]answer{
	// Input validation runs before any layer below, and every Invalid
	// message is written for the client (the one validation of an order,
	// a restock request id reused with another quantity).
	flashsale.Invalid: {status: http.StatusBadRequest, message: "request refused as invalid", showOwn: true},
	PayloadTooLarge:   {status: http.StatusRequestEntityTooLarge, message: "request body larger than 64 KiB"},
	// Not a 2xx, so a payment provider whose callback stalled retries it.
	RequestTimeout:   {status: http.StatusRequestTimeout, message: "request body not received in time; send the request again"},
	NotFound:         {status: http.StatusNotFound, message: "no such endpoint"},
	MethodNotAllowed: {status: http.StatusMethodNotAllowed, message: "method not allowed"},
	flashsale.Unauthenticated: {status: http.StatusUnauthorized, message: "missing, expired or invalid buyer token",
		challenge: `Bearer realm="flashsale"`},
	Unauthorized: {status: http.StatusUnauthorized, message: "missing or wrong admin bearer token",
		challenge: `Bearer realm="flashsale-admin"`},
	UserMismatch: {status: http.StatusForbidden,
		message: "user_id differs from the buyer the token names; leave it out or send your own"},
	BadSignature: {status: http.StatusUnauthorized, message: "bad signature"},

	flashsale.RateLimited: {status: http.StatusTooManyRequests, message: "too many buy requests from this user; retry later"},
	// The edge's own BUSY says when to come back (edge.RetryError); a store's
	// (its Redis pool exhausted under a burst) gets a second.
	flashsale.Busy: {status: http.StatusTooManyRequests, message: "units remain but many buyers are ahead of you; retry shortly",
		retryAfter: time.Second},
	flashsale.Unavailable: {status: http.StatusServiceUnavailable, message: "service temporarily unavailable; retry",
		retryAfter: unavailableRetry},

	flashsale.SoldOut: {status: http.StatusConflict, message: "sold out"},
	// Drift means Redis offered a unit MySQL did not have: to the buyer it
	// is sold out.
	flashsale.StockDrift:      {status: http.StatusConflict, message: "sold out", as: flashsale.SoldOut},
	flashsale.LimitExceeded:   {status: http.StatusUnprocessableEntity, message: "you already hold as many units of this sku as one buyer may"},
	flashsale.UnknownSKU:      {status: http.StatusNotFound, message: "unknown sku"},
	flashsale.OrderIDConflict: {status: http.StatusConflict, message: "order id already used by another order"},
	flashsale.OrderNotFound:   {status: http.StatusNotFound, message: "order not found"},
	flashsale.OrderClosed:     {status: http.StatusConflict, message: "order already paid, expired, cancelled or rejected"},
	flashsale.AmountMismatch: {status: http.StatusUnprocessableEntity,
		message: "amount differs from the order's; the payment is recorded for refund and the order stays payable"},
	flashsale.TransactionConflict: {status: http.StatusConflict,
		message: "transaction_id was already used for another order; nothing was recorded for this one"},

	// Its message names the term, its bounds and why.
	flashsale.HoldExtended:    {status: http.StatusConflict, message: "this order's hold was extended once already; its pay_by stands"},
	flashsale.InvalidTerms:    {status: http.StatusBadRequest, message: "sale terms out of their bounds", showOwn: true},
	flashsale.SKUInUse:        {status: http.StatusConflict, message: "unpaid orders hold units of this sku; wait for them to close"},
	flashsale.ResizeBusy:      {status: http.StatusConflict, message: "another bucket resize of this sku is running; retry when it ends"},
	flashsale.PreheatMismatch: {status: http.StatusConflict, message: "redis stock does not match the database after preheat; retry when no sale is running"},

	flashsale.NotSoldOut:    {status: http.StatusConflict, message: "units are on sale; buy one instead of waiting"},
	flashsale.WaitlistFull:  {status: http.StatusConflict, message: "the waitlist of this sku is full"},
	flashsale.NotOnWaitlist: {status: http.StatusNotFound, message: "you are not on this sku's waitlist and hold no offer from it"},

	// A fair sale (docs/design/fair-sale.md).
	flashsale.NoSale:            {status: http.StatusNotFound, message: "this sku has no queued sale"},
	flashsale.NotInQueue:        {status: http.StatusNotFound, message: "you are not in this sku's queue; enter it first"},
	flashsale.SaleNotOpen:       {status: http.StatusConflict, message: "the sale has not opened yet; enter its queue and wait for your pass"},
	flashsale.SalePaused:        {status: http.StatusConflict, message: "the sale is paused; your place in the queue is kept"},
	flashsale.SaleClosed:        {status: http.StatusConflict, message: "the sale is closed"},
	flashsale.QueueFull:         {status: http.StatusConflict, message: "the queue of this sale is full"},
	flashsale.SaleStateConflict: {status: http.StatusConflict, message: "the sale's state does not allow this", showOwn: true},
	flashsale.PassRequired: {status: http.StatusUnauthorized,
		message:   "a buy of this sku needs a valid pass (Sale-Pass header) from GET /api/v1/skus/{sku}/queue/me",
		challenge: `Bearer realm="flashsale"`},
	flashsale.PassForeign: {status: http.StatusForbidden, message: "this pass was issued to another buyer or for another sku"},
	flashsale.PassUsed:    {status: http.StatusForbidden, message: "this pass has bought its unit already"},
	flashsale.PassExpired: {status: http.StatusForbidden, message: "this pass expired; its unit went to the next buyer in the queue"},
}

// internalAnswer is every code the table does not name.
var internalAnswer = answer{status: http.StatusInternalServerError, message: "internal error", as: flashsale.Internal}

// refusal is an answer this door put into words itself: its message is
// shown whatever the code, and a 5xx among them (not ready, shutting down)
// is an answer, not a failure to log.
type refusal struct{ err *flashsale.Error }

func (r *refusal) Error() string { return r.err.Error() }
func (r *refusal) Unwrap() error { return r.err }

func refuse(code flashsale.Code, msg string) error {
	return &refusal{&flashsale.Error{Code: code, Message: msg}}
}

func invalid(msg string) error { return refuse(flashsale.Invalid, msg) }

// errorBody is every error answer.
type errorBody struct {
	Code    flashsale.Code `json:"code"`
	Message string         `json:"message"`
}

// answerFor looks err's code up in answers and puts the answer into the
// body the client sees.
func answerFor(err error) (answer, errorBody) {
	code := flashsale.ErrorCode(err)
	switch {
	case code != flashsale.Internal && code != flashsale.Unavailable:
	case redisguard.IsOverload(err):
		// This instance's own Redis pool, exhausted (its timeout, or the
		// request's deadline met waiting for a connection), on a path no
		// layer coded: load, not an outage. Retry shortly.
		code = flashsale.Busy
	case code == flashsale.Internal && dependencyDown(err):
		code = flashsale.Unavailable
	}
	a, ok := answers[code]
	if !ok {
		a = internalAnswer
	}
	body := errorBody{Code: code, Message: a.message}
	if a.as != "" {
		body.Code = a.as
	}
	_, own := errors.AsType[*refusal](err)
	if e, ok := errors.AsType[*flashsale.Error](err); ok && (own || a.showOwn) && e.Message != "" {
		body.Message = e.Message
	}
	// The edge says when a shed buyer may come back.
	if re, ok := errors.AsType[*edge.RetryError](err); ok && re.After > 0 {
		a.retryAfter = re.After
	}
	return a, body
}

// dependencyDown is the one outage this door still recognises by itself:
// Temporal's own "did not answer" (orders.TemporalDown) on an error no
// layer coded. Redis, MySQL and Temporal outages are coded Unavailable
// where they happen (inventory, orderdb, orders.CodeDown), so the API, the
// CLI and the activities agree; this keeps the pinned answer for a bare
// Temporal error (and a bare deadline) at 503 rather than 500.
func dependencyDown(err error) bool { return orders.TemporalDown(err) }

// writeError answers with err's code and logs what the client does not see.
// A client that has hung up gets nothing (clientGone): the failure is its
// own doing, the middleware logs it once as 499, and it says nothing about
// Redis, MySQL or Temporal.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	if clientGone(r, err) {
		return
	}
	a, body := answerFor(err)
	if _, answered := errors.AsType[*refusal](err); a.status >= 500 && !answered {
		// A failure of a dependency or of the code: somebody must look.
		s.log.ErrorContext(r.Context(), "request failed", append([]any{"method", r.Method, "path", r.URL.Path,
			"status", a.status, "code", body.Code, "request_id", requestID(r), "error", err}, s.buyerAttr(r)...)...)
	} else {
		s.log.DebugContext(r.Context(), "request refused", append([]any{"method", r.Method, "path", r.URL.Path,
			"status", a.status, "code", body.Code, "error", err}, s.buyerAttr(r)...)...)
	}
	if a.challenge != "" {
		w.Header().Set("WWW-Authenticate", a.challenge)
	}
	if a.retryAfter > 0 {
		// Whole seconds, rounded up: "0" would invite an instant retry.
		w.Header().Set("Retry-After", formatSeconds(a.retryAfter))
	}
	s.writeJSON(w, r, a.status, body)
}

// clientGone reports whether r's client hung up before err could be
// answered. net/http cancels a request's context on every failed read of
// its connection, and a body cut off by the server's own read timeout is
// one of those while the client is still waiting: that client must hear
// 408 (readBody's RequestTimeout), or net/http answers 200 with no body and
// a payment provider that stops at any 2xx never sends its callback again.
func clientGone(r *http.Request, err error) bool {
	return r.Context().Err() != nil && flashsale.ErrorCode(err) != RequestTimeout
}

func formatSeconds(d time.Duration) string {
	secs := max(int64(math.Ceil(d.Seconds())), 1)
	return strconv.FormatInt(secs, 10)
}
