//go:build integration

package httpapi_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flashsale/flashsale/internal/httpapi"
)

// With HTTP_H2C the real http.Server (HTTPServer) answers HTTP/2 without
// TLS from a client with prior knowledge, many requests over one
// connection, beside HTTP/1.1; without it, only HTTP/1.1.
func TestH2CServedOnlyWhenAsked(t *testing.T) {
	s := newStack(t, stackOptions{})
	serve := func(h2c bool) string {
		cfg := s.apiConfig()
		cfg.H2C = h2c
		api, err := httpapi.New(deps(t, s.b), cfg)
		require.NoError(t, err)
		return "http://" + serveHTTP(t, api)
	}
	client := func(h2c bool) *http.Client {
		p := new(http.Protocols)
		if h2c {
			p.SetUnencryptedHTTP2(true)
		} else {
			p.SetHTTP1(true)
		}
		tr := &http.Transport{Protocols: p}
		t.Cleanup(tr.CloseIdleConnections)
		return &http.Client{Transport: tr, Timeout: 5 * time.Second}
	}
	get := func(c *http.Client, base string) (*http.Response, error) {
		resp, err := c.Get(base + "/healthz")
		if err == nil {
			require.NoError(t, resp.Body.Close())
		}
		return resp, err
	}

	on := serve(true)
	for range 3 {
		resp, err := get(client(true), on)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.Equal(t, 2, resp.ProtoMajor, "HTTP/2 without TLS")
	}
	resp, err := get(client(false), on)
	require.NoError(t, err)
	require.Equal(t, 1, resp.ProtoMajor, "HTTP/1.1 beside it")

	off := serve(false)
	_, err = get(client(true), off)
	require.Error(t, err, "no h2c unless asked")
	resp, err = get(client(false), off)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
}
