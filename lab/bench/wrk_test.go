//go:build integration

package bench

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const wrkSample = `Running 2s test @ http://127.0.0.1:41234/api/v1/orders
  2 threads and 64 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency     4.12ms    5.01ms  61.30ms   88.61%
    Req/Sec     8.71k     1.02k   10.93k    70.00%
  Latency Distribution
     50%    2.34ms
     75%    5.10ms
     90%   10.02ms
     99%   25.00ms
  34800 requests in 2.00s, 8.43MB read
  Socket errors: connect 0, read 2, write 0, timeout 1
  Non-2xx or 3xx responses: 34800
Requests/sec:  17400.12
Transfer/sec:      4.21MB
`

func TestParseWrk(t *testing.T) {
	r, err := ParseWrk(wrkSample)
	require.NoError(t, err)
	require.Equal(t, 17400.12, r.PerSec)
	require.Equal(t, int64(34800), r.Ops)
	require.Equal(t, 2.0, r.Seconds)
	require.Equal(t, 2.34, r.P50ms)
	require.Equal(t, 25.0, r.P99ms)
	require.Equal(t, int64(34800), r.Non2xx)
	require.Equal(t, int64(3), r.SocketErrors)

	us := strings.NewReplacer("2.34ms", "770.00us", "25.00ms", "1.20s").Replace(wrkSample)
	r, err = ParseWrk(us)
	require.NoError(t, err)
	require.Equal(t, 0.77, r.P50ms)
	require.Equal(t, 1200.0, r.P99ms)

	_, err = ParseWrk("wrk: bad flag")
	require.Error(t, err)
	_, err = ParseWrk("Requests/sec: 10.0\n")
	require.ErrorContains(t, err, "--latency")
}

func TestWrkScriptQuotes(t *testing.T) {
	s := WrkScript(`{"a":"]]"}`, [][]string{{"Authorization: Bearer t1"}, {"Authorization: Bearer t2"}})
	require.Contains(t, s, `[=[{"a":"]]"}]=]`, "a long bracket the body cannot close")
	require.Contains(t, s, `[ [[Authorization]] ] = [[Bearer t1]]`)
	require.Contains(t, s, `[ [[Authorization]] ] = [[Bearer t2]]`)
}

// The real wrk against a real handler: every header set is used, the body
// arrives, and non-2xx answers are counted.
func TestWrkRunsAgainstAServer(t *testing.T) {
	require.NoError(t, CheckWrk(), "wrk is part of the bench")
	var seen sync.Map
	var bad atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if r.Method != http.MethodPost || string(b) != `{"x":1}` || r.Header.Get("Content-Type") != "application/json" {
			bad.Add(1)
		}
		seen.Store(r.Header.Get("Authorization"), true)
		if r.Header.Get("Authorization") == "Bearer b" {
			w.WriteHeader(http.StatusConflict)
		}
	}))
	defer srv.Close()
	r, err := Wrk(context.Background(), WrkOptions{Name: "t", URL: srv.URL, Threads: 1, Connections: 2, Duration: time.Second,
		Body: `{"x":1}`, Headers: [][]string{{"Authorization: Bearer a"}, {"Authorization: Bearer b"}}})
	require.NoError(t, err)
	require.Equal(t, "t", r.Name)
	require.Positive(t, r.Ops)
	require.Zero(t, bad.Load(), "method, body and content type as asked")
	for _, tok := range []string{"Bearer a", "Bearer b"} {
		_, ok := seen.Load(tok)
		require.True(t, ok, "header set %q used", tok)
	}
	require.Positive(t, r.Non2xx)
	require.Less(t, r.Non2xx, r.Ops, "only the b requests answered 409")
	_, err = Wrk(context.Background(), WrkOptions{})
	require.Error(t, err)
}
