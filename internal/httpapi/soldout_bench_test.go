//go:build integration

package httpapi_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/flashsale/flashsale/internal/app/apptest"
	"github.com/flashsale/flashsale/internal/httpapi"
	"github.com/flashsale/flashsale/internal/identity"
)

// benchWriter is a reusable http.ResponseWriter, so the benchmark counts
// the handler's allocations, not a recorder's.
type benchWriter struct {
	h      http.Header
	status int
	body   bytes.Buffer
}

func (w *benchWriter) Header() http.Header { return w.h }
func (w *benchWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
}

func (w *benchWriter) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.body.Write(p)
}

func (w *benchWriter) reset() {
	clear(w.h)
	w.status = 0
	w.body.Reset()
}

// replayBody is a request body that can be read again.
type replayBody struct{ bytes.Reader }

func (*replayBody) Close() error { return nil }

// BenchmarkSoldOutAnswer measures a buy request for a SKU this instance
// holds as sold out, through the API's real handler (middleware, edge,
// real Redis and MySQL behind it), against a hello-world handler served
// the same way in the same run: x_hello is the sold-out answer's ns/op
// over hello's. Run it with -benchmem:
//
//	go test -tags integration -run '^$' -bench BenchmarkSoldOutAnswer -benchmem ./internal/httpapi
func BenchmarkSoldOutAnswer(b *testing.B) {
	// No worker: every answer measured is the edge's.
	sys := apptest.Start(b, apptest.Options{Name: "api-bench", WorkerConcurrency: 1, NoWorker: true, Logger: testLogger()})
	id, be := sys.ID, sys.Backend
	var err error
	d := httpapi.FromBackend(be)
	if d.Buyers, err = identity.NewVerifier(b.Context(), identity.Config{Secret: []byte(testBuyerKey)}); err != nil {
		b.Fatal(err)
	}
	// A long local TTL: the loop measures the cached answer, not the
	// Redis read that renews it every second.
	api, err := httpapi.New(d, httpapi.Config{WebhookSecrets: []string{testSecret}, AdminToken: testAdmin,
		LocalSoldOutTTL: time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	runCtx, stop := context.WithCancel(context.Background())
	defer stop()
	go func() { _ = api.Run(runCtx) }()
	for !api.Gate().Stats().Subscribed {
		time.Sleep(time.Millisecond)
	}
	h := api.Handler()
	w := &benchWriter{h: http.Header{}}
	serve := func(method, path string, body []byte, header http.Header) *benchWriter {
		r := httptest.NewRequest(method, path, bytes.NewReader(body))
		r.Header = header
		w.reset()
		h.ServeHTTP(w, r)
		return w
	}

	sku := id + "-bench"
	if got := serve(http.MethodPut, "/api/v1/admin/skus/"+sku, []byte(`{"total":0,"price":100}`),
		http.Header{"Authorization": {"Bearer " + testAdmin}}); got.status != http.StatusOK {
		b.Fatalf("put sku: %d %s", got.status, got.body.String())
	}
	tok, err := buyers.Token(id+"-buyer", time.Hour)
	if err != nil {
		b.Fatal(err)
	}
	withToken := http.Header{"Authorization": {"Bearer " + tok}, "Content-Type": {"application/json"}}
	body := []byte(`{"items":[{"sku_id":"` + sku + `","quantity":1}]}`)
	// The first answer reads Redis and caches the SKU as sold out.
	if got := serve(http.MethodPost, "/api/v1/orders", body, withToken); got.status != http.StatusConflict {
		b.Fatalf("first buy: %d %s", got.status, got.body.String())
	}

	hello := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write([]byte("hello\n"))
	})
	var helloNs float64
	run := func(name string, h http.Handler, header http.Header, want int) {
		b.Run(name, func(b *testing.B) {
			rb := &replayBody{}
			r := httptest.NewRequest(http.MethodPost, "/api/v1/orders", rb)
			r.Header = header
			r.ContentLength = int64(len(body))
			b.ReportAllocs()
			for b.Loop() {
				rb.Reset(body)
				r.Body = rb
				w.reset()
				h.ServeHTTP(w, r)
				if w.status != want {
					b.Fatalf("status %d, want %d: %s", w.status, want, w.body.String())
				}
			}
			ns := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
			if name == "hello" {
				helloNs = ns
				return
			}
			b.ReportMetric(ns/helloNs, "x_hello")
		})
	}
	run("hello", hello, withToken, http.StatusOK)
	run("sold_out", h, withToken, http.StatusConflict)
}
