package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"

	"github.com/flashsale/flashsale/internal/edge"
	"github.com/flashsale/flashsale/internal/inventory"
	"github.com/flashsale/flashsale/internal/orderdb"
	"github.com/flashsale/flashsale/internal/orders"
	"github.com/flashsale/flashsale/workflows"
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
		{wrap(&edge.RetryError{Err: edge.ErrBusy, After: time.Second}), 429, "BUSY", "1"},
		{wrap(&edge.RetryError{Err: edge.ErrRateLimited, After: 150 * time.Millisecond}), 429, "RATE_LIMITED", "1"},
		{wrap(edge.ErrSoldOut), 409, "SOLD_OUT", ""},
		{wrap(edge.ErrUnknownSKU), 404, "UNKNOWN_SKU", ""},
		{wrap(orderdb.ErrUnknownSKU), 404, "UNKNOWN_SKU", ""},
		{wrap(inventory.ErrUnknownSKU), 404, "UNKNOWN_SKU", ""},
		{wrap(edge.ErrIDConflict), 409, "ORDER_ID_CONFLICT", ""},
		{wrap(orders.ErrIDConflict), 409, "ORDER_ID_CONFLICT", ""},
		{wrap(orders.ErrNotFound), 404, "ORDER_NOT_FOUND", ""},
		{wrap(orders.ErrClosed), 409, "ORDER_CLOSED", ""},
		{wrap(orderdb.ErrSKUInUse), 409, "SKU_IN_USE", ""},
		{wrap(inventory.ErrPreheatMismatch), 409, "PREHEAT_MISMATCH", ""},
		{wrap(inventory.ErrNotSoldOut), 409, "NOT_SOLD_OUT", ""},
		{wrap(inventory.ErrResizeBusy), 409, "RESIZE_IN_PROGRESS", ""},
		{wrap(orders.ErrInvalid), 400, "INVALID_REQUEST", ""},
		{wrap(&http.MaxBytesError{Limit: maxBodyBytes}), 413, "PAYLOAD_TOO_LARGE", ""},
		{wrap(edge.ErrUnavailable), 503, "UNAVAILABLE", "2"},
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

func TestRejectionReasons(t *testing.T) {
	for reason, code := range map[string]string{
		workflows.ReasonSoldOut: "SOLD_OUT", workflows.ReasonStockDrift: "SOLD_OUT",
		workflows.ReasonLimitExceeded: "LIMIT_EXCEEDED", workflows.ReasonUnknownSKU: "UNKNOWN_SKU",
		workflows.ReasonInvalid: "INVALID_REQUEST", workflows.ReasonUnavailable: "UNAVAILABLE",
		"SOMETHING_NEW": "INTERNAL",
	} {
		require.Equal(t, code, rejection(reason).Code, reason)
	}
}

func TestDecodeMessagesDoNotEchoInput(t *testing.T) {
	long := strings.Repeat("z", 5000)
	_, err := decodeOrder([]byte(`{"user_id":"u","items":[],"` + long + `":1}`))
	require.Error(t, err)
	require.Less(t, len(err.Error()), 200)
	require.Contains(t, err.Error(), "unknown field")
}
