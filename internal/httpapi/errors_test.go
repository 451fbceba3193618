package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/internal/edge"
)

func TestClassify(t *testing.T) {
	// Wrapped like the layers below wrap them, with details that must not
	// reach the client.
	wrap := func(err error) error { return fmt.Errorf("place order o-1 on db 10.0.0.7: %w", err) }
	tests := []struct {
		err        error
		status     int
		code       string
		retryAfter string
	}{
		{wrap(&edge.RetryError{Err: coded(flashsale.Busy), After: time.Second}), 429, "BUSY", "1"},
		{wrap(&edge.RetryError{Err: coded(flashsale.RateLimited), After: 150 * time.Millisecond}), 429, "RATE_LIMITED", "1"},
		{wrap(coded(flashsale.SoldOut)), 409, "SOLD_OUT", ""},
		{wrap(coded(flashsale.UnknownSKU)), 404, "UNKNOWN_SKU", ""},
		{wrap(coded(flashsale.UnknownSKU)), 404, "UNKNOWN_SKU", ""},
		{wrap(coded(flashsale.UnknownSKU)), 404, "UNKNOWN_SKU", ""},
		{wrap(coded(flashsale.OrderIDConflict)), 409, "ORDER_ID_CONFLICT", ""},
		{wrap(coded(flashsale.OrderIDConflict)), 409, "ORDER_ID_CONFLICT", ""},
		{wrap(coded(flashsale.OrderNotFound)), 404, "ORDER_NOT_FOUND", ""},
		{wrap(coded(flashsale.OrderClosed)), 409, "ORDER_CLOSED", ""},
		{wrap(coded(flashsale.SKUInUse)), 409, "SKU_IN_USE", ""},
		{wrap(coded(flashsale.PreheatMismatch)), 409, "PREHEAT_MISMATCH", ""},
		{wrap(coded(flashsale.NotSoldOut)), 409, "NOT_SOLD_OUT", ""},
		{wrap(coded(flashsale.ResizeBusy)), 409, "RESIZE_IN_PROGRESS", ""},
		{wrap(flashsale.Errorf(flashsale.Invalid, "quantity must be 1-1000")), 400, "INVALID_REQUEST", ""},
		{wrap(tooLarge(t)), 413, "PAYLOAD_TOO_LARGE", ""},
		{wrap(coded(RequestTimeout)), 408, "REQUEST_TIMEOUT", ""},
		{wrap(coded(flashsale.Unavailable)), 503, "UNAVAILABLE", "2"},
		{wrap(serviceerror.NewResourceExhausted(0, "rps limit")), 503, "UNAVAILABLE", "2"},
		{wrap(serviceerror.NewUnavailable("frontend down")), 503, "UNAVAILABLE", "2"},
		{wrap(errors.New("something nobody expected")), 500, "INTERNAL", ""},
	}
	for _, tt := range tests {
		t.Run(tt.code+" "+tt.err.Error(), func(t *testing.T) {
			var logs bytes.Buffer
			s := &Server{log: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelError}))}
			w := httptest.NewRecorder()
			s.writeError(w, httptest.NewRequest(http.MethodGet, "/x", nil), tt.err)
			require.Equal(t, tt.status, w.Code)
			require.Equal(t, tt.retryAfter, w.Header().Get("Retry-After"))
			var body map[string]string
			require.NoError(t, json.Unmarshal(w.Body.Bytes(), &body))
			require.Equal(t, tt.code, body["code"])
			require.NotEmpty(t, body["message"])
			require.NotContains(t, w.Body.String(), "10.0.0.7", "details stay in the log")
			if tt.status == http.StatusInternalServerError {
				require.Equal(t, "internal error", body["message"])
				require.Contains(t, logs.String(), "something nobody expected")
			}
		})
	}
}

// tooLarge is what readBody returns for a body over the cap.
func tooLarge(t *testing.T) error {
	t.Helper()
	r := httptest.NewRequest(http.MethodPost, "/x", strings.NewReader(strings.Repeat("x", maxBodyBytes+1)))
	_, err := readBody(httptest.NewRecorder(), r)
	require.Error(t, err)
	return err
}

// A rejected order's reason is a code, answered through the same table.
func TestRejectionReasons(t *testing.T) {
	for reason, want := range map[string]pinnedAnswer{
		string(flashsale.SoldOut):       {409, "", "SOLD_OUT", "sold out"},
		string(flashsale.StockDrift):    {409, "", "SOLD_OUT", "sold out"},
		string(flashsale.LimitExceeded): {422, "", "LIMIT_EXCEEDED", "you already hold as many units of this sku as one buyer may"},
		string(flashsale.UnknownSKU):    {404, "", "UNKNOWN_SKU", "unknown sku"},
		// Before issue 10 these two had words of their own ("order refused
		// as invalid", "stock service unavailable; nothing was reserved,
		// retry"); they now get their code's, like any other error.
		string(flashsale.Invalid):     {400, "", "INVALID_REQUEST", "request refused as invalid"},
		string(flashsale.Unavailable): {503, "2", "UNAVAILABLE", "service temporarily unavailable; retry"},
		"SOMETHING_NEW":               {500, "", "INTERNAL", "internal error"},
	} {
		require.Equal(t, want, answerOf(t, refuse(flashsale.Code(reason), "")), reason)
	}
}

// TestAnswersTable checks every entry of the table as a client sees it, and
// that a code the table does not name is 500 INTERNAL without its words.
func TestAnswersTable(t *testing.T) {
	const detail = "order o-1 on db 10.0.0.7"
	for code, a := range answers {
		t.Run(string(code), func(t *testing.T) {
			s := &Server{log: slog.New(slog.NewTextHandler(io.Discard, nil))}
			w := httptest.NewRecorder()
			s.writeError(w, httptest.NewRequest(http.MethodGet, "/x", nil), fmt.Errorf("op: %w", &flashsale.Error{Code: code, Message: detail}))
			require.Equal(t, a.status, w.Code)
			require.GreaterOrEqual(t, a.status, 400)
			var body map[string]string
			require.NoError(t, json.Unmarshal(w.Body.Bytes(), &body))
			want := code
			if a.as != "" {
				want = a.as
			}
			require.Equal(t, string(want), body["code"])
			require.NotEmpty(t, a.message)
			if a.showOwn {
				require.Equal(t, detail, body["message"], "the code's messages are written for the client")
			} else {
				require.Equal(t, a.message, body["message"])
			}
			require.Equal(t, a.challenge, w.Header().Get("WWW-Authenticate"))
			if a.challenge != "" {
				require.Equal(t, http.StatusUnauthorized, a.status, "a challenge belongs to a 401")
			}
			if a.retryAfter > 0 {
				require.Equal(t, formatSeconds(a.retryAfter), w.Header().Get("Retry-After"))
			} else {
				require.Empty(t, w.Header().Get("Retry-After"))
			}
		})
	}
	// A caller's token is refused with the scheme it must use (a payment
	// provider's bad signature names none: it signs, it has no token).
	require.NotEmpty(t, answers[flashsale.Unauthenticated].challenge)
	require.NotEmpty(t, answers[Unauthorized].challenge)
	for _, code := range []flashsale.Code{flashsale.Internal, flashsale.Permanent, flashsale.AlreadyPaid,
		flashsale.AlreadyReleased, flashsale.PaymentReceived, flashsale.PaymentTimeout, flashsale.CancelledByUser,
		flashsale.UnknownOrder, flashsale.PaymentFailed, "SOMETHING_NEW"} {
		require.NotContains(t, answers, code)
		require.Equal(t, pinnedAnswer{500, "", "INTERNAL", "internal error"},
			answerOf(t, &flashsale.Error{Code: code, Message: detail}), code)
	}
}

// A refusal this door words itself shows its words, whatever the code,
// and a 5xx among them is not logged as a failure.
func TestRefusalShowsItsWords(t *testing.T) {
	var logs bytes.Buffer
	s := &Server{log: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelError}))}
	w := httptest.NewRecorder()
	s.writeError(w, httptest.NewRequest(http.MethodGet, "/readyz", nil), refuse(flashsale.Unavailable, "not ready: mysql unreachable"))
	require.Equal(t, http.StatusServiceUnavailable, w.Code)
	require.JSONEq(t, `{"code":"UNAVAILABLE","message":"not ready: mysql unreachable"}`, w.Body.String())
	require.Empty(t, logs.String())

	// The same code from a layer below is a failure to look at, in fixed words.
	w = httptest.NewRecorder()
	s.writeError(w, httptest.NewRequest(http.MethodGet, "/x", nil), fmt.Errorf("read 10.0.0.7: %w", &flashsale.Error{Code: flashsale.Unavailable, Message: "redis 10.0.0.7 down"}))
	require.JSONEq(t, `{"code":"UNAVAILABLE","message":"service temporarily unavailable; retry"}`, w.Body.String())
	require.Contains(t, logs.String(), "redis 10.0.0.7 down")
}

func TestDecodeMessagesDoNotEchoInput(t *testing.T) {
	long := strings.Repeat("z", 5000)
	_, _, err := decodeOrder([]byte(`{"user_id":"u","items":[],"` + long + `":1}`))
	require.Error(t, err)
	require.Less(t, len(err.Error()), 200)
	require.Contains(t, err.Error(), "unknown field")
}

// TestCancelledRequestStillAnswered: net/http cancels the request's
// context when a body read fails, for a hang-up and for its own read
// timeout alike. The timeout is answered 408; only a hang-up gets nothing.
// A handler that writes nothing is answered 500, never net/http's empty 200.
func TestCancelledRequestStillAnswered(t *testing.T) {
	var logs bytes.Buffer
	s := &Server{log: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelError})), prom: newPromMetrics()}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	cancelled := httptest.NewRequest(http.MethodPost, "/x", nil).WithContext(ctx)

	timedOut := httptest.NewRequest(http.MethodPost, "/x", iotest.ErrReader(os.ErrDeadlineExceeded)).WithContext(ctx)
	_, err := readBody(httptest.NewRecorder(), timedOut)
	w := httptest.NewRecorder()
	s.writeError(w, cancelled, err)
	require.Equal(t, http.StatusRequestTimeout, w.Code)
	require.JSONEq(t, `{"code":"REQUEST_TIMEOUT","message":"request body not received in time; send the request again"}`, w.Body.String())

	hungUp := httptest.NewRequest(http.MethodPost, "/x", iotest.ErrReader(io.ErrUnexpectedEOF)).WithContext(ctx)
	_, err = readBody(httptest.NewRecorder(), hungUp)
	w = httptest.NewRecorder()
	s.writeError(w, cancelled, err)
	require.Empty(t, w.Body.String(), "nobody is left to read it")
	require.Empty(t, logs.String())

	w = httptest.NewRecorder()
	s.middleware(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})).ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/x", nil))
	require.Equal(t, http.StatusInternalServerError, w.Code)
	require.JSONEq(t, `{"code":"INTERNAL","message":"internal error"}`, w.Body.String())
	require.Contains(t, logs.String(), "handler returned without an answer")
}

// TestBuyNamingOrderIDIsRefusedByName: the buyer's key is client_order_id;
// a body with order_id (the earlier contract's name for the key, and the
// answer's name for the order's id) is refused, whatever its value, with
// words that name the field to use, and never read as the key.
func TestBuyNamingOrderIDIsRefusedByName(t *testing.T) {
	for _, v := range []string{`"cart-7"`, `null`, `""`, `1`, `"b-0123"`} {
		for _, body := range []string{
			`{"order_id":` + v + `,"items":[{"sku_id":"s1","quantity":1}]}`,
			`{"client_order_id":"cart-7","order_id":` + v + `,"items":[{"sku_id":"s1","quantity":1}]}`,
		} {
			_, _, err := decodeOrder([]byte(body))
			a, out := answerFor(err)
			require.Equal(t, http.StatusBadRequest, a.status, body)
			require.Equal(t, flashsale.Invalid, out.Code, body)
			require.Equal(t, "order_id is not a buy request field: send your idempotency key as client_order_id "+
				"(the answer's order_id is the order's id, for reading, cancelling and paying it)", out.Message, body)
		}
	}
	o, key, err := decodeOrder([]byte(`{"client_order_id":"cart-7","items":[{"sku_id":"s1","quantity":1}]}`))
	require.NoError(t, err)
	require.Equal(t, "cart-7", key)
	require.Empty(t, o.OrderID, "the order's id is the server's to name")
	for body, words := range map[string]string{
		`{"client_order_id":"","items":[{"sku_id":"s1","quantity":1}]}`:     "client_order_id must be 1-64",
		`{"client_order_id":"wl-x","items":[{"sku_id":"s1","quantity":1}]}`: "client_order_id must not start with wl-",
		`{"client_order_id":"a b","items":[]}`:                              "an order needs 1-20 items\nclient_order_id must be",
	} {
		_, _, err := decodeOrder([]byte(body))
		_, out := answerFor(err)
		require.Equal(t, flashsale.Invalid, out.Code, body)
		require.Contains(t, out.Message, words, body)
	}
}
