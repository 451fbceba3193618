package testenv

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestCallJSON(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		switch {
		case r.Header.Get("Authorization") != "Bearer tok":
			http.Error(w, `{"code":"UNAUTHORIZED"}`, http.StatusUnauthorized)
		case r.Method != http.MethodPut || string(body) != `{"total":3}`:
			http.Error(w, "unexpected "+r.Method+" "+string(body), http.StatusBadRequest)
		default:
			_, _ = io.WriteString(w, `{"total":3,"added":true}`)
		}
	}))
	defer srv.Close()

	var out struct {
		Total int  `json:"total"`
		Added bool `json:"added"`
	}
	if err := CallJSON(http.MethodPut, srv.URL, "tok", map[string]int{"total": 3}, &out); err != nil {
		t.Fatal(err)
	}
	if out.Total != 3 || !out.Added {
		t.Fatalf("decoded %+v", out)
	}
	err := CallJSON(http.MethodPut, srv.URL, "wrong", map[string]int{"total": 3}, &out)
	if err == nil || !strings.Contains(err.Error(), "401") || !strings.Contains(err.Error(), "UNAUTHORIZED") {
		t.Fatalf("a refusal: %v, want its status and body", err)
	}
}
