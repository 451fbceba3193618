//go:build integration

package httpapi_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/flashsale/flashsale"
)

// roundTrips records the Redis round trips (a command, or a pipeline of
// them) that name one of its words in a key, from recordRoundTrips until
// stop; each as its commands' names and first keys. go-redis has no
// RemoveHook: after stop the hook only passes commands on.
type roundTrips struct {
	words []string
	on    atomic.Bool
	mu    sync.Mutex
	trips [][]string
}

func recordRoundTrips(s *stack, words ...string) *roundTrips {
	rt := &roundTrips{words: words}
	rt.on.Store(true)
	s.b.Redis.AddHook(rt)
	return rt
}

func (rt *roundTrips) stop() [][]string {
	rt.on.Store(false)
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return rt.trips
}

func (rt *roundTrips) record(cmds []redis.Cmder) {
	if !rt.on.Load() {
		return
	}
	var trip []string
	mine := false
	for _, c := range cmds {
		args := c.Args()
		line := c.Name()
		if len(args) > 1 {
			key, _ := args[1].(string)
			line += " " + key
			for _, w := range rt.words {
				mine = mine || strings.Contains(key, w)
			}
		}
		trip = append(trip, line)
	}
	if mine {
		rt.mu.Lock()
		rt.trips = append(rt.trips, trip)
		rt.mu.Unlock()
	}
}

func (rt *roundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }
func (rt *roundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		rt.record([]redis.Cmder{cmd})
		return next(ctx, cmd)
	}
}
func (rt *roundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		rt.record(cmds)
		return next(ctx, cmds)
	}
}

// gauge reads one unlabelled metric of reg.
func gauge(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		m := mf.GetMetric()[0]
		if m.GetGauge() != nil {
			return m.GetGauge().GetValue()
		}
		return m.GetCounter().GetValue()
	}
	t.Fatalf("metric %s not exported", name)
	return 0
}

// With the admission limit held (here pinned to 1, and no worker to answer
// the order that holds it), a new buy is answered 429 BUSY with Retry-After
// at once instead of queueing inside Temporal; a payment is never refused
// by it; and the permit comes back when the held placement ends.
func TestAdmissionShedsNewOrdersNotPayments(t *testing.T) {
	s := newStack(t, stackOptions{admissionMax: 1})
	api := s.api
	reg := prometheus.NewRegistry()
	require.NoError(t, api.server.RegisterMetrics(reg))
	sku := s.name("adm")
	api.putSKU(sku, 5, 300, 4, 1)
	r := api.buyRetrying(s.name("paid-later"), s.name("u-p"), sku, 1)
	require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
	paid := r.json(t)["order_id"].(string)

	s.sys.StopWorker()
	// A buyer whose order cannot be answered (no worker) holds the only
	// permit until it gives up.
	type outcome struct {
		status int
		err    error
	}
	held := make(chan outcome, 1)
	req, err := http.NewRequest(http.MethodPost, api.url+"/api/v1/orders",
		bytes.NewReader(buyBody(t, s.name("held"), s.name("u-held"), sku, 1)))
	require.NoError(t, err)
	req.Header = buyerHeader(t, s.name("u-held"))
	req.Header.Set("Content-Type", "application/json")
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 6*time.Second)
		defer cancel()
		resp, err := api.client.Do(req.WithContext(ctx))
		if err != nil {
			held <- outcome{err: err}
			return
		}
		resp.Body.Close()
		held <- outcome{status: resp.StatusCode}
	}()
	require.Eventually(t, func() bool { return gauge(t, reg, "flashsale_admission_in_flight") == 1 },
		5*time.Second, 20*time.Millisecond)
	require.Equal(t, float64(1), gauge(t, reg, "flashsale_admission_limit"))

	r = api.buy(s.name("shed"), s.name("u-shed"), sku, 1)
	require.Equal(t, http.StatusTooManyRequests, r.status, "%s", r.body)
	require.Equal(t, "BUSY", r.code(t))
	require.Equal(t, "1", r.header.Get("Retry-After"))
	require.Equal(t, float64(1), gauge(t, reg, "flashsale_admission_rejected_total"))
	require.Equal(t, float64(1), gauge(t, reg, "flashsale_admission_in_flight"), "the shed buy took no permit")
	// Its retry with the same key asks the limit again: the refusal left
	// no placed marker that would make the retry a repeat of a placed
	// order, which skips every layer and starts the workflow unlimited.
	r = api.buy(s.name("shed"), s.name("u-shed"), sku, 1)
	require.Equal(t, http.StatusTooManyRequests, r.status, "%s", r.body)
	require.Equal(t, "BUSY", r.code(t))
	require.Equal(t, float64(2), gauge(t, reg, "flashsale_admission_rejected_total"))
	require.Equal(t, float64(1), gauge(t, reg, "flashsale_admission_in_flight"))

	// What a refused buy costs in Redis: one round trip for the SKU's sale
	// state and its queued flag (read together: a SKU meant for a fair sale
	// sells nothing before its queue exists), one for the placed marker of
	// the one id its key names (the gate's); no stock read, no rate limit
	// (the limit is checked before them).
	key, buyer := s.name("shed3"), s.name("u-shed3")
	id := flashsale.BuyerOrderID(buyer, key)
	trips := recordRoundTrips(s, sku, key, buyer, id)
	r = api.buy(key, buyer, sku, 1)
	require.Equal(t, http.StatusTooManyRequests, r.status, "%s", r.body)
	require.Equal(t, [][]string{
		{"hget fs:{sku:" + sku + "}:sale", "exists fs:{sku:" + sku + "}:queued"},
		{"get fs:placed:" + id},
	}, trips.stop())
	require.Equal(t, float64(3), gauge(t, reg, "flashsale_admission_rejected_total"))

	// A payment while the limit is full: admitted (the order cannot
	// answer without a worker, so the API hands it over: 202).
	r = api.pay(callback{OrderID: paid, TransactionID: paid + "-tx", Amount: 300, Status: "SUCCESS"})
	require.Equal(t, http.StatusAccepted, r.status, "%s", r.body)

	got := <-held
	require.True(t, errors.Is(got.err, context.DeadlineExceeded), "the held buyer gave up without an answer: %+v", got)
	require.Eventually(t, func() bool { return gauge(t, reg, "flashsale_admission_in_flight") == 0 },
		5*time.Second, 20*time.Millisecond, "the permit came back when the placement ended")
	s.sys.StartWorker()
	require.Equal(t, http.StatusCreated, api.buyRetrying(s.name("after"), s.name("u-after"), sku, 1).status)
	require.Eventually(t, func() bool { return api.order(paid)["status"] == "PAID" }, 20*time.Second, 100*time.Millisecond)
}
