package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"time"

	"github.com/google/uuid"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/internal/requestid"
)

// The middleware every request passes, and the one JSON writer.

// statusClientClosed is nginx's 499 "client closed request": the client
// hung up before its answer was ready, so none was sent. It appears in the
// access log and the metrics, never on the wire.
const statusClientClosed = 499

// errNoAnswer is a handler returning without writing a status.
var errNoAnswer = errors.New("handler returned without an answer")

// middleware counts answers by status, writes the access log, sets headers
// every answer needs and turns a panic into a logged 500 instead of a
// dropped connection.
func (s *Server) middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		x := &exchange{rec: statusRecorder{ResponseWriter: w}}
		rec := &x.rec
		start := time.Now()
		// r is replaced, not shadowed: the deferred logging below must see
		// the request the mux filled in (its Pattern).
		id := r.Header.Get(requestIDHeader)
		if !flashsale.ValidID(id, requestid.MaxLength) {
			id = uuid.NewString()
		}
		w.Header().Set(requestIDHeader, id)
		// requestid carries it on to the order workflow's logs (a Temporal
		// context propagator, internal/backend).
		r = r.WithContext(context.WithValue(requestid.NewContext(r.Context(), id), exchangeKey{}, x))
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				s.log.ErrorContext(r.Context(), "handler panic", "panic", p, "stack", string(debug.Stack()))
				if rec.status == 0 {
					s.writeError(rec, r, fmt.Errorf("panic: %v", p))
				}
			}
			status := rec.status
			if status == 0 && r.Context().Err() != nil {
				status = statusClientClosed
			}
			if status == 0 {
				// net/http would answer 200 with no body, which a payment
				// provider takes for "done". Every path must write its
				// answer; one that did not is a bug, logged at ERROR by
				// writeError as any 500 is.
				s.writeError(rec, r, errNoAnswer)
				status = rec.status
			}
			took := time.Since(start)
			s.metrics.count(status)
			s.prom.observeRequest(r, status, took)
			s.accessLog(r, status, took)
		}()
		h := w.Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Cache-Control", "no-store")
		next.ServeHTTP(rec, r)
	})
}

// accessLog writes one line per request. Ordinary answers are DEBUG (a
// flood is millions of lines); a client that hung up is INFO, once, because
// it is the client's doing, not a failure (those are logged at ERROR where
// they happen).
func (s *Server) accessLog(r *http.Request, status int, took time.Duration) {
	level, msg := slog.LevelDebug, "request"
	if status == statusClientClosed {
		level, msg = slog.LevelInfo, "client closed request"
	}
	s.log.Log(r.Context(), level, msg, append([]any{"method", r.Method, "path", r.URL.Path, "status", status,
		"duration_ms", took.Milliseconds(), "request_id", requestID(r)}, s.buyerAttr(r)...)...)
}

// exchange is what the middleware keeps of one request while it is
// served, in one allocation: the answer's status, and the buyer
// authenticate found (empty until then), so the door's own lines about the
// request (its refusal or failure, the access log) name the buyer. Errors
// from the layers below never name them. The request's context carries it
// (exchangeKey).
type exchange struct {
	rec   statusRecorder
	buyer string
}

// exchangeKey is the request context's key to its *exchange.
type exchangeKey struct{}

// noteBuyer records r's buyer for its log lines.
func noteBuyer(r *http.Request, buyer string) {
	if x, ok := r.Context().Value(exchangeKey{}).(*exchange); ok {
		x.buyer = buyer
	}
}

// buyerAttr is the log attribute naming r's buyer by digest
// (flashsale.BuyerLogAttr), none before a buyer's token was read.
func (s *Server) buyerAttr(r *http.Request) []any {
	if x, ok := r.Context().Value(exchangeKey{}).(*exchange); ok && x.buyer != "" {
		return []any{flashsale.BuyerLogAttr(s.deps.Orders.UserIDKey, x.buyer)}
	}
	return nil
}

// requestIDHeader names a request in the logs of every hop: taken from the
// caller (a load balancer or the client) when it is a sane token, minted
// otherwise, and echoed in the answer, so a buyer's complaint quoting it
// finds the log lines.
const requestIDHeader = "X-Request-Id"

// requestID is the id the middleware gave r.
func requestID(r *http.Request) string { return requestid.FromContext(r.Context()) }

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection.
func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

func (s *Server) writeJSON(w http.ResponseWriter, r *http.Request, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		s.log.ErrorContext(r.Context(), "encode response", "path", r.URL.Path, "error", err)
		status = http.StatusInternalServerError
		body = []byte(`{"code":"INTERNAL","message":"internal error"}`)
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	if _, err := w.Write(append(body, '\n')); err != nil {
		// The client went away; nothing left to tell it.
		s.log.DebugContext(r.Context(), "write response", "path", r.URL.Path, "error", err)
	}
}
