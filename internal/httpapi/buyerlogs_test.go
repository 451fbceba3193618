//go:build integration

package httpapi_test

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/internal/app/apptest"
	"github.com/flashsale/flashsale/internal/httpapi"
	"github.com/flashsale/flashsale/internal/identity"
	"github.com/flashsale/flashsale/internal/testenv"
)

// TestLogsNameBuyersByDigest runs an order path that names buyers in the
// logs of both processes, at DEBUG, against the real services: A buys the
// one unit, A's second buy is over the per-buyer limit (the API's refusal
// line, whose error came from the stock's limit check), B joins the
// waitlist, A cancels and the order workflow offers the unit to B (the
// worker's line). Every line names a buyer only by their digest
// (flashsale.UserIDDigest under the system's USER_ID_HMAC_KEY, the "user"
// attribute); no raw user id appears anywhere in the output.
func TestLogsNameBuyersByDigest(t *testing.T) {
	logs := &testenv.Buffer{}
	logger := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	sys := apptest.Start(t, apptest.Options{Name: "buyerlog-test", Logger: logger, API: &httpapi.Config{
		WebhookSecrets: []string{testSecret}, AdminToken: testAdmin, Identity: identity.Config{Secret: []byte(testBuyerKey)},
	}})
	id := sys.ID
	rdb := testenv.Redis(t)
	t.Cleanup(func() {
		for _, pattern := range []string{"fs:{sku:" + id + "*", "fs:placed:" + id + "*", "rate:fs:*:" + id + "*"} {
			iter := rdb.Scan(context.Background(), 0, pattern, 1000).Iterator()
			for iter.Next(context.Background()) {
				_ = rdb.Unlink(context.Background(), iter.Val()).Err()
			}
		}
	})
	in := instanceOf(t, sys.API)
	sku := id + "-bl"
	in.putSKU(sku, 1, 100, 1, 1)
	a, b := id+"-buyer-a", id+"-buyer-b"
	digest := func(user string) string { return flashsale.UserIDDigest(sys.Config.UserIDKey, user) }

	first := in.mustBuy("k1", a, sku, 1)
	r := in.buy("k2", a, sku, 1)
	require.Equal(t, "LIMIT_EXCEEDED", r.code(t), "%s", r.body)
	require.Equal(t, http.StatusCreated, in.call(http.MethodPost, "/api/v1/skus/"+sku+"/waitlist", nil, buyerHeader(t, b)).status)
	require.Equal(t, http.StatusOK, in.cancel(a, first).status)

	require.EventuallyWithT(t, func(c *assert.CollectT) {
		var refusal, offer bool
		for _, l := range logLines(t, logs) {
			switch {
			case l["msg"] == "request refused" && l["code"] == "LIMIT_EXCEEDED":
				refusal = l["user"] == digest(a)
			case l["msg"] == "released unit offered to waitlist":
				offer = l["user"] == digest(b)
			}
		}
		assert.True(c, refusal, "the API's refusal names A by digest")
		assert.True(c, offer, "the worker's offer names B by digest")
	}, 30*time.Second, 100*time.Millisecond)
	for _, l := range strings.Split(logs.String(), "\n") {
		for _, user := range []string{a, b} {
			require.NotContains(t, l, user, "a raw user id in the logs")
		}
	}
}
