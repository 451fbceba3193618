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

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/internal/edge"
	"github.com/flashsale/flashsale/internal/redisguard"
)

// pinnedAnswer is what a client sees for an error: status, Retry-After and
// the exact {code, message} body.
type pinnedAnswer struct {
	status     int
	retryAfter string
	code       string
	message    string
}

// coded is an error of a layer below: a code, and words that name its
// ids and hosts, which the client must not see unless the code's words
// are written for it.
func coded(c flashsale.Code) error {
	return &flashsale.Error{Code: c, Message: "detail of " + string(c) + " at 10.0.0.7"}
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
// table must keep every one of them. (Before, each package had its own
// sentinel per code: edge's, orderdb's and inventory's UNKNOWN_SKU were
// three rows; now they are one code.) Errors are wrapped with details the
// client must not see.
func TestPinnedAnswers(t *testing.T) {
	wrap := func(err error) error { return fmt.Errorf("place order o-1 on db 10.0.0.7: %w", err) }
	const unavailable = "service temporarily unavailable; retry"
	tests := []struct {
		name string
		err  error
		want pinnedAnswer
	}{
		{"busy", &edge.RetryError{Err: coded(flashsale.Busy), After: time.Second},
			pinnedAnswer{429, "1", "BUSY", "units remain but many buyers are ahead of you; retry shortly"}},
		{"rate limited", &edge.RetryError{Err: coded(flashsale.RateLimited), After: 150 * time.Millisecond},
			pinnedAnswer{429, "1", "RATE_LIMITED", "too many buy requests from this user; retry later"}},
		{"busy 2.5s", &edge.RetryError{Err: coded(flashsale.Busy), After: 2500 * time.Millisecond},
			pinnedAnswer{429, "3", "BUSY", "units remain but many buyers are ahead of you; retry shortly"}},
		{"edge sold out", coded(flashsale.SoldOut), pinnedAnswer{409, "", "SOLD_OUT", "sold out"}},
		{"coded sold out", &flashsale.Error{Code: flashsale.SoldOut, Message: "sku 10.0.0.7 sold out"},
			pinnedAnswer{409, "", "SOLD_OUT", "sold out"}},
		{"edge unknown sku", coded(flashsale.UnknownSKU), pinnedAnswer{404, "", "UNKNOWN_SKU", "unknown sku"}},
		{"orderdb unknown sku", coded(flashsale.UnknownSKU), pinnedAnswer{404, "", "UNKNOWN_SKU", "unknown sku"}},
		{"inventory unknown sku", coded(flashsale.UnknownSKU), pinnedAnswer{404, "", "UNKNOWN_SKU", "unknown sku"}},
		{"edge id conflict", coded(flashsale.OrderIDConflict), pinnedAnswer{409, "", "ORDER_ID_CONFLICT", "order id already used by another order"}},
		{"orders id conflict", coded(flashsale.OrderIDConflict), pinnedAnswer{409, "", "ORDER_ID_CONFLICT", "order id already used by another order"}},
		{"order not found", coded(flashsale.OrderNotFound), pinnedAnswer{404, "", "ORDER_NOT_FOUND", "order not found"}},
		{"orderdb not found", coded(flashsale.OrderNotFound), pinnedAnswer{404, "", "ORDER_NOT_FOUND", "order not found"}},
		{"order closed", coded(flashsale.OrderClosed), pinnedAnswer{409, "", "ORDER_CLOSED", "order already paid, expired, cancelled or rejected"}},
		{"sku in use", coded(flashsale.SKUInUse), pinnedAnswer{409, "", "SKU_IN_USE", "unpaid orders hold units of this sku; wait for them to close"}},
		{"preheat mismatch", coded(flashsale.PreheatMismatch), pinnedAnswer{409, "", "PREHEAT_MISMATCH",
			"redis stock does not match the database after preheat; retry when no sale is running"}},
		{"resize busy", coded(flashsale.ResizeBusy), pinnedAnswer{409, "", "RESIZE_IN_PROGRESS", "another bucket resize of this sku is running; retry when it ends"}},
		{"not sold out", coded(flashsale.NotSoldOut), pinnedAnswer{409, "", "NOT_SOLD_OUT", "units are on sale; buy one instead of waiting"}},
		{"waitlist full", coded(flashsale.WaitlistFull), pinnedAnswer{409, "", "WAITLIST_FULL", "the waitlist of this sku is full"}},
		{"queue full", coded(flashsale.QueueFull), pinnedAnswer{409, "", "QUEUE_FULL", "the queue of this sale is full"}},
		{"not waiting", coded(flashsale.NotOnWaitlist), pinnedAnswer{404, "", "NOT_ON_WAITLIST", "you are not on this sku's waitlist and hold no offer from it"}},
		{"edge unavailable", coded(flashsale.Unavailable), pinnedAnswer{503, "2", "UNAVAILABLE", unavailable}},
		{"temporal exhausted", serviceerror.NewResourceExhausted(0, "rps limit"), pinnedAnswer{503, "2", "UNAVAILABLE", unavailable}},
		{"temporal down", serviceerror.NewUnavailable("frontend down"), pinnedAnswer{503, "2", "UNAVAILABLE", unavailable}},
		{"deadline", context.DeadlineExceeded, pinnedAnswer{503, "2", "UNAVAILABLE", unavailable}},
		// This instance's Redis pool exhausted, on a path no layer coded:
		// load, not an outage.
		{"redis pool timeout", fmt.Errorf("read: %w", redis.ErrPoolTimeout),
			pinnedAnswer{429, "1", "BUSY", "units remain but many buyers are ahead of you; retry shortly"}},
		{"deadline waiting for a redis connection", fmt.Errorf("read: %w: %w", redisguard.ErrPoolWait, context.DeadlineExceeded),
			pinnedAnswer{429, "1", "BUSY", "units remain but many buyers are ahead of you; retry shortly"}},
		{"permanent", coded(flashsale.Permanent), pinnedAnswer{500, "", "INTERNAL", "internal error"}},
		{"unknown", errors.New("something nobody expected at 10.0.0.7"), pinnedAnswer{500, "", "INTERNAL", "internal error"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, answerOf(t, wrap(tt.err)))
		})
	}
}
