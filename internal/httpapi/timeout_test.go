//go:build integration

package httpapi_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flashsale/flashsale/internal/httpapi"
)

// TestStalledCallbackIsNotAcknowledged: a payment callback whose body
// stalls past the read timeout is answered 408 REQUEST_TIMEOUT on the wire
// by the real http.Server (HTTPServer, the read timeout set through
// Config), never 200, so the provider retries; its retry is recorded and
// the order is paid. On 73799bf the stalled callback was answered 200 with
// an empty body and the provider never came back.
func TestStalledCallbackIsNotAcknowledged(t *testing.T) {
	s := newStack(t, stackOptions{})
	sku := s.name("sku")
	s.api.putSKU(sku, 2, 4999, 2, 1)
	id := s.api.mustBuy(s.name("o1"), s.name("u1"), sku, 1)

	const readTimeout = 700 * time.Millisecond
	cfg := s.apiConfig()
	cfg.ReadTimeout = readTimeout
	api, err := httpapi.New(deps(t, s.b), cfg)
	require.NoError(t, err)
	addr := serveHTTP(t, api)

	body := mustJSON(t, callback{OrderID: id, TransactionID: s.name("tx-1"), Amount: 4999, Status: "SUCCESS"})
	sig := httpapi.Sign(testSecret, time.Now(), body)

	// The provider's first attempt: headers and half the body, then
	// nothing, its connection still open.
	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer conn.Close()
	_, err = fmt.Fprintf(conn, "POST /api/v1/payments/callback HTTP/1.1\r\nHost: provider\r\nContent-Type: application/json\r\n"+
		"%s: %s\r\nContent-Length: %d\r\n\r\n%s", httpapi.SignatureHeader, sig, len(body), body[:len(body)/2])
	require.NoError(t, err)
	sent := time.Now()
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(10*time.Second)))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err, "the server must answer a stalled body, not drop it")
	raw, err := io.ReadAll(resp.Body)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		require.NoError(t, err)
	}
	require.NoError(t, resp.Body.Close())
	require.GreaterOrEqual(t, time.Since(sent), readTimeout-100*time.Millisecond, "answered only once the read timeout passed")
	require.Equal(t, http.StatusRequestTimeout, resp.StatusCode, "%s", raw)
	var e map[string]string
	require.NoError(t, json.Unmarshal(raw, &e), "body %q", raw)
	require.Equal(t, "REQUEST_TIMEOUT", e["code"])
	require.NotEmpty(t, e["message"])

	// Nothing was recorded from the half callback.
	require.Empty(t, s.payments(id))
	require.Equal(t, "PENDING_PAYMENT", s.api.order(id)["status"])
	require.Equal(t, int64(1), api.Metrics().Responses["408"])
	require.Zero(t, api.Metrics().Responses["200"])

	// The provider's retry, the whole signed callback, to the same server.
	req, err := http.NewRequest(http.MethodPost, "http://"+addr+"/api/v1/payments/callback", bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(httpapi.SignatureHeader, sig)
	retry, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	raw, err = io.ReadAll(retry.Body)
	require.NoError(t, err)
	require.NoError(t, retry.Body.Close())
	require.Equal(t, http.StatusOK, retry.StatusCode, "%s", raw)
	require.JSONEq(t, fmt.Sprintf(`{"order_id":%q,"status":"PAID"}`, id), string(raw))
	require.Eventually(t, func() bool { return s.api.order(id)["status"] == "PAID" }, 10*time.Second, 50*time.Millisecond)
	require.Len(t, s.payments(id), 1)
	require.Equal(t, int64(1), s.dbInventory(sku).Sold)
	// What starter check runs: no invariant broken by anything above.
	s.checkClean(sku)
}
