package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/internal/buying"
	"github.com/flashsale/flashsale/internal/edge"
	"github.com/flashsale/flashsale/internal/requestid"
)

// The quick sold-out answer (docs/design/edge.md, "cheapest refusal
// first"). At the height of a sale nearly every buy asks for a SKU already
// sold out; each used to pay for the token's verification, a strict
// decode, a request id, a context, boxed log arguments and label lookups
// before the in-process cache said 409. Now a one-line buy of a SKU this
// instance holds as sold out is answered ahead of the middleware: a bounded
// read of the body into a pooled buffer, a scan for its SKU and key, the
// edge's QuickAnswer, and static bytes, counted on atomics and
// pre-resolved Prometheus children. Anything else (several lines, a body
// the scan does not take, a SKU on sale, Redis down, a key that may repeat
// a placed order) goes on to the full path with its body intact.
//
// The answer reveals only what GET /api/v1/inventory/{sku} publishes (the
// SKU is sold out), so it needs no token: a tokenless flood costs no HMAC
// or RSA verification. A request that may be a repeat is answered by the
// full path, as its buyer; unauthenticated it is SOLD_OUT too, so a forged
// subject learns nothing about another buyer's keys from the status.
//
// The request id: a sane X-Request-Id from the caller is echoed; none is
// minted for this answer (nothing is logged under it, and no workflow
// carries it).

// quickBodyMax is the largest body the quick path reads: a one-line buy is
// under 300 bytes. Larger (or chunked) bodies take the full path.
const quickBodyMax = 1024

// quickBuffers are the quick path's buffers: the body, and a token's
// decoded payload.
type quickBuffers struct {
	body   [quickBodyMax]byte
	claims [1024]byte
}

var quickPool = sync.Pool{New: func() any { return new(quickBuffers) }}

// The quick answer's bytes and headers, made once from the one table of
// answers, so they are the full path's 409 SOLD_OUT to the byte.
var (
	quickSoldOutBody = func() []byte {
		_, body := answerFor(flashsale.Errorf(flashsale.SoldOut, "sold out"))
		b, err := json.Marshal(body)
		if err != nil {
			panic(err)
		}
		return append(b, '\n')
	}()
	quickContentType   = []string{"application/json; charset=utf-8"}
	quickContentLength = []string{strconv.Itoa(len(quickSoldOutBody))}
	quickNoSniff       = []string{"nosniff"}
	quickNoStore       = []string{"no-store"}
)

// quickMetrics are the instruments the quick answer moves, resolved once.
type quickMetrics struct {
	requests prometheus.Counter
	duration prometheus.Observer
	buy      prometheus.Observer
}

func newQuickMetrics(m promMetrics) quickMetrics {
	return quickMetrics{
		requests: m.requests.WithLabelValues(buyRoute, strconv.Itoa(http.StatusConflict)),
		duration: m.duration.WithLabelValues(buyRoute),
		buy:      m.buy.WithLabelValues(string(buying.Shed)),
	}
}

// maybeRepeatKey marks a request the quick path sent on because it may
// repeat a placed order: unauthenticated, it is answered SOLD_OUT.
type maybeRepeatKey struct{}

// quickSoldOut answers what it can of POST /api/v1/orders before next
// (the middleware and the mux) sees the request.
func (s *Server) quickSoldOut(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/api/v1/orders" || !s.gate.AnySoldOut() ||
			r.ContentLength <= 0 || r.ContentLength > quickBodyMax {
			next.ServeHTTP(w, r)
			return
		}
		start := time.Now()
		buf := quickPool.Get().(*quickBuffers)
		n, err := io.ReadFull(r.Body, buf.body[:r.ContentLength])
		if err == nil {
			if q, ok := scanQuickBuy(buf.body[:n]); ok {
				sub := claimedSubject(r.Header.Get("Authorization"), buf.claims[:])
				if q.hasUser && q.user != view(sub) {
					// The full path answers USER_MISMATCH or 401.
					sub, q.sku = nil, ""
				}
				if q.sku != "" {
					switch s.gate.QuickAnswer(q.sku, q.key, view(sub)) {
					case edge.QuickSoldOut:
						s.writeQuickSoldOut(w, r, q.sku, start)
						quickPool.Put(buf)
						return
					case edge.QuickMaybeRepeat:
						// The SKU, cloned out of the pooled buffer, for the
						// sale page's count of the answer.
						r = r.WithContext(context.WithValue(r.Context(), maybeRepeatKey{}, strings.Clone(q.sku)))
					}
				}
			}
		}
		// The full path reads the body again, this one's error included
		// (a stalled body is still 408, after the token's 401).
		body := bytes.Clone(buf.body[:n])
		quickPool.Put(buf)
		r.Body = replayedBody{Reader: io.MultiReader(bytes.NewReader(body), errReader{err}), closer: r.Body}
		next.ServeHTTP(w, r)
	})
}

// writeQuickSoldOut writes the static 409 and counts it where the full
// path's would be: the edge's sold_out_local decision, the SKU for the
// per-SKU gauges, the answers by status and route, the buy's shed time.
func (s *Server) writeQuickSoldOut(w http.ResponseWriter, r *http.Request, sku string, start time.Time) {
	h := w.Header()
	h["X-Content-Type-Options"] = quickNoSniff
	h["Cache-Control"] = quickNoStore
	h["Content-Type"] = quickContentType
	h["Content-Length"] = quickContentLength
	if ids := r.Header[requestIDHeader]; len(ids) > 0 && flashsale.ValidID(ids[0], requestid.MaxLength) {
		h[requestIDHeader] = ids[:1]
	}
	w.WriteHeader(http.StatusConflict)
	_, _ = w.Write(quickSoldOutBody) // a client gone is nobody to tell
	s.gate.CountSoldOutLocal()
	s.recent.note(sku, start)
	took := time.Since(start)
	s.metrics.count(http.StatusConflict)
	s.quick.requests.Inc()
	s.quick.duration.Observe(took.Seconds())
	s.quick.buy.Observe(took.Seconds())
	s.traffic.Observe(sku, http.StatusConflict, true, took)
	if s.log.Enabled(r.Context(), slog.LevelDebug) {
		s.log.DebugContext(r.Context(), "request", "method", r.Method, "path", r.URL.Path,
			"status", http.StatusConflict, "duration_ms", took.Milliseconds(), "quick", true)
	}
}

// maybeRepeat reports whether the quick path sent r on as a possible
// repeat of a placed order of a sold-out SKU, and which SKU.
func maybeRepeat(r *http.Request) (sku string, ok bool) {
	sku, ok = r.Context().Value(maybeRepeatKey{}).(string)
	return sku, ok
}

// replayedBody is a body the quick path read, given to the full path
// again; Close closes the original.
type replayedBody struct {
	io.Reader
	closer io.Closer
}

func (b replayedBody) Close() error { return b.closer.Close() }

// errReader ends a replayed body with the original read's error (nil:
// EOF).
type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) {
	if e.err == nil || e.err == io.EOF {
		return 0, io.EOF
	}
	return 0, e.err
}
