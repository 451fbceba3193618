package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/internal/edge"
	"github.com/flashsale/flashsale/internal/inventory"
	"github.com/flashsale/flashsale/internal/orderdb"
	"github.com/flashsale/flashsale/internal/orders"
)

// pinnedAnswer is what a client sees for an error: status, Retry-After and
// the exact {code, message} body.
type pinnedAnswer struct {
	status     int
	retryAfter string
	code       string
	message    string
}

// answerOf runs err through the door's one error writer.
func answerOf(t *testing.T, err error) pinnedAnswer {
	t.Helper()
	s := &Server{log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	w := httptest.NewRecorder()
	s.writeError(w, httptest.NewRequest(http.MethodGet, "/x", nil), err)
	var body map[string]string
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &body))
	require.Len(t, body, 2, "an error is exactly {code, message}: %s", w.Body)
	return pinnedAnswer{status: w.Code, retryAfter: w.Header().Get("Retry-After"), code: body["code"], message: body["message"]}
}

// TestPinnedAnswers pins the answers the API gave for the errors of the
// layers below before the codes were mapped in one table (issue 10): the
// table must keep every one of them. Errors are wrapped with details the
// client must not see.
func TestPinnedAnswers(t *testing.T) {
	wrap := func(err error) error { return fmt.Errorf("place order o-1 on db 10.0.0.7: %w", err) }
	const unavailable = "service temporarily unavailable; retry"
	tests := []struct {
		name string
		err  error
		want pinnedAnswer
	}{
		{"busy", &edge.RetryError{Err: edge.ErrBusy, After: time.Second},
			pinnedAnswer{429, "1", "BUSY", "units remain but many buyers are ahead of you; retry shortly"}},
		{"rate limited", &edge.RetryError{Err: edge.ErrRateLimited, After: 150 * time.Millisecond},
			pinnedAnswer{429, "1", "RATE_LIMITED", "too many buy requests from this user; retry later"}},
		{"busy 2.5s", &edge.RetryError{Err: edge.ErrBusy, After: 2500 * time.Millisecond},
			pinnedAnswer{429, "3", "BUSY", "units remain but many buyers are ahead of you; retry shortly"}},
		{"edge sold out", edge.ErrSoldOut, pinnedAnswer{409, "", "SOLD_OUT", "sold out"}},
		{"coded sold out", &flashsale.Error{Code: flashsale.SoldOut, Message: "sku 10.0.0.7 sold out"},
			pinnedAnswer{409, "", "SOLD_OUT", "sold out"}},
		{"edge unknown sku", edge.ErrUnknownSKU, pinnedAnswer{404, "", "UNKNOWN_SKU", "unknown sku"}},
		{"orderdb unknown sku", orderdb.ErrUnknownSKU, pinnedAnswer{404, "", "UNKNOWN_SKU", "unknown sku"}},
		{"inventory unknown sku", inventory.ErrUnknownSKU, pinnedAnswer{404, "", "UNKNOWN_SKU", "unknown sku"}},
		{"edge id conflict", edge.ErrIDConflict, pinnedAnswer{409, "", "ORDER_ID_CONFLICT", "order id already used by another order"}},
		{"orders id conflict", orders.ErrIDConflict, pinnedAnswer{409, "", "ORDER_ID_CONFLICT", "order id already used by another order"}},
		{"order not found", orders.ErrNotFound, pinnedAnswer{404, "", "ORDER_NOT_FOUND", "order not found"}},
		{"orderdb not found", orderdb.ErrNotFound, pinnedAnswer{404, "", "ORDER_NOT_FOUND", "order not found"}},
		{"order closed", orders.ErrClosed, pinnedAnswer{409, "", "ORDER_CLOSED", "order already paid, expired, cancelled or rejected"}},
		{"sku in use", orderdb.ErrSKUInUse, pinnedAnswer{409, "", "SKU_IN_USE", "unpaid orders hold units of this sku; wait for them to close"}},
		{"preheat mismatch", inventory.ErrPreheatMismatch, pinnedAnswer{409, "", "PREHEAT_MISMATCH",
			"redis stock does not match the database after preheat; retry when no sale is running"}},
		{"resize busy", inventory.ErrResizeBusy, pinnedAnswer{409, "", "RESIZE_IN_PROGRESS", "another bucket resize of this sku is running; retry when it ends"}},
		{"not sold out", inventory.ErrNotSoldOut, pinnedAnswer{409, "", "NOT_SOLD_OUT", "units are on sale; buy one instead of waiting"}},
		{"waitlist full", inventory.ErrWaitlistFull, pinnedAnswer{409, "", "WAITLIST_FULL", "the waitlist of this sku is full"}},
		{"not waiting", inventory.ErrNotWaiting, pinnedAnswer{404, "", "NOT_ON_WAITLIST", "you are not on this sku's waitlist and hold no offer from it"}},
		{"edge unavailable", edge.ErrUnavailable, pinnedAnswer{503, "2", "UNAVAILABLE", unavailable}},
		{"temporal exhausted", serviceerror.NewResourceExhausted(0, "rps limit"), pinnedAnswer{503, "2", "UNAVAILABLE", unavailable}},
		{"temporal down", serviceerror.NewUnavailable("frontend down"), pinnedAnswer{503, "2", "UNAVAILABLE", unavailable}},
		{"deadline", context.DeadlineExceeded, pinnedAnswer{503, "2", "UNAVAILABLE", unavailable}},
		{"permanent", orderdb.ErrPermanent, pinnedAnswer{500, "", "INTERNAL", "internal error"}},
		{"unknown", errors.New("something nobody expected at 10.0.0.7"), pinnedAnswer{500, "", "INTERNAL", "internal error"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, answerOf(t, wrap(tt.err)))
		})
	}
}
