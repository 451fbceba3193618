package httpapi

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/internal/orders"
)

// middlewareServer is a Server with what the middleware alone needs,
// logging to log.
func middlewareServer(log *slog.Logger) *Server {
	return &Server{log: log, prom: newPromMetrics(), deps: Deps{Orders: &orders.Service{UserIDKey: []byte("middleware-test-key")}}}
}

// TestAccessLogNamesTheBuyer: the door's own lines about a request name the
// buyer authenticate found, by digest, the access log included; a request
// whose buyer was never found names nobody.
func TestAccessLogNamesTheBuyer(t *testing.T) {
	var logs bytes.Buffer
	s := middlewareServer(slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	const buyer = "buyer-7"
	h := s.middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/anonymous" {
			s.writeError(w, r, errUnauthenticated("no token"))
			return
		}
		noteBuyer(r, buyer)
		s.writeError(w, r, refuse(flashsale.SoldOut, "sold out"))
	}))
	for _, path := range []string{"/bought", "/anonymous"} {
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, path, nil))
	}

	digest := flashsale.UserIDDigest(s.deps.Orders.UserIDKey, buyer)
	var lines int
	for l := range strings.Lines(logs.String()) {
		var line map[string]any
		require.NoError(t, json.Unmarshal([]byte(l), &line))
		require.Contains(t, []string{"request", "request refused"}, line["msg"], l)
		if line["path"] == "/anonymous" {
			require.NotContains(t, line, flashsale.BuyerLogKey, l)
		} else {
			require.Equal(t, digest, line[flashsale.BuyerLogKey], l)
		}
		require.NotContains(t, l, buyer, "a raw user id in the logs")
		lines++
	}
	require.Equal(t, 4, lines, "a refusal and an access line per request")
}

// BenchmarkMiddleware is the chain every request passes before its handler:
// request id, buyer slot, status recorder, headers, metrics, access log (at
// a level that drops it, as in production). The handler names its buyer as
// authenticate does and answers. The caller's X-Request-Id is kept, so the
// figures are the middleware's own, not a UUID's.
func BenchmarkMiddleware(b *testing.B) {
	s := middlewareServer(slog.New(slog.DiscardHandler))
	h := s.middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		noteBuyer(r, "buyer-7")
		w.WriteHeader(http.StatusNoContent)
	}))
	r := httptest.NewRequest(http.MethodGet, "/api/v1/orders/o-1", nil)
	r.Header.Set(requestIDHeader, "req-0123456789")
	w := &discardWriter{h: http.Header{}}
	b.ReportAllocs()
	for b.Loop() {
		h.ServeHTTP(w, r)
	}
	if w.status != http.StatusNoContent {
		b.Fatalf("answered %d", w.status)
	}
}

// discardWriter is a ResponseWriter that keeps the last status and drops
// the body.
type discardWriter struct {
	h      http.Header
	status int
}

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (w *discardWriter) WriteHeader(code int)        { w.status = code }
