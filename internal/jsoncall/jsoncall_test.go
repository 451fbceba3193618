package jsoncall

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDoSendsJSONAndReadsTheAnswer(t *testing.T) {
	var got http.Header
	var sent []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Clone()
		sent, _ = io.ReadAll(r.Body)
		w.Header().Set("Retry-After", "2")
		w.WriteHeader(http.StatusConflict)
		_, _ = io.WriteString(w, `{"code":"SOLD_OUT","message":"sold out"}`)
	}))
	defer srv.Close()

	a, err := Do(context.Background(), srv.Client(), http.MethodPost, srv.URL, []byte(`{"sku_id":"a"}`),
		http.Header{"Authorization": {"Bearer t"}})
	require.NoError(t, err)
	require.Equal(t, "application/json", got.Get("Content-Type"))
	require.Equal(t, "Bearer t", got.Get("Authorization"))
	require.JSONEq(t, `{"sku_id":"a"}`, string(sent))
	require.Equal(t, http.StatusConflict, a.Status)
	require.Equal(t, "2", a.Header.Get("Retry-After"))
	require.Equal(t, "SOLD_OUT", a.Code())
	require.Equal(t, "409 SOLD_OUT", a.Key())
}

func TestKeyOfAnAnswerWithoutCode(t *testing.T) {
	require.Equal(t, "201", Answer{Status: http.StatusCreated, Body: []byte(`{"order_id":"o"}`)}.Key())
	require.Equal(t, "502", Answer{Status: http.StatusBadGateway, Body: []byte("not json")}.Key())
}

func TestDoWithoutAnAnswer(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	a, err := Do(context.Background(), http.DefaultClient, http.MethodGet, url, nil, nil)
	require.Error(t, err)
	require.Zero(t, a.Status)
}
