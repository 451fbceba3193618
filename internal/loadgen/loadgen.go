// Package loadgen plays a flash sale against the HTTP API the way a crowd
// does: many more buyers than units, retries on "busy", duplicate clicks,
// and winners who pay through signed provider callbacks, cancel, or let the
// deadline pass. Units released by cancels and expiries go back on sale and
// are bought by buyers still trying. The demo and the benchmark both use it.
package loadgen

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/flashsale/flashsale/internal/httpapi"
	"github.com/flashsale/flashsale/internal/identity"
	"github.com/flashsale/flashsale/internal/jsoncall"
)

// Config describes one sale.
type Config struct {
	BaseURL       string // e.g. http://127.0.0.1:8080
	SKU           string
	Units         int64 // stock on sale, for the progress bar and the summary
	Buyers        int   // distinct users
	Concurrency   int   // buyers acting at once
	WebhookSecret string
	// Tokens mints each buyer's bearer token, as the shop's login service
	// would (the API's BUYER_JWT_SECRET).
	Tokens *identity.Minter
	// Shares of first-round winners (the first Units reservations) that
	// pay, cancel; the rest let the payment deadline pass. Buyers who win a
	// released unit always pay, so the sale converges instead of halving
	// forever.
	PayShare, CancelShare float64
	// DuplicateClickShare of buyers send their order twice at once, with
	// the same order id, like an impatient thumb.
	DuplicateClickShare float64
	// Deadline ends the sale for buyers still trying.
	Deadline time.Duration
	// PaymentDelay is how long a paying winner takes before paying.
	PaymentDelay time.Duration
	// OnProgress, if set, is called as units are reserved and sold.
	OnProgress func(Progress)
	Client     *http.Client
	Seed       uint64
}

// Progress is a running count, for a progress bar.
type Progress struct {
	Reserved, Paid int64
}

// Result is what happened, counted by the clients.
type Result struct {
	Requests   int64            `json:"requests"`
	Answers    map[string]int64 `json:"answers"` // "201", "409 SOLD_OUT", "429 BUSY", ...
	Reserved   int64            `json:"reserved"`
	Paid       int64            `json:"paid"`
	Cancelled  int64            `json:"cancelled"`
	LeftUnpaid int64            `json:"left_unpaid"` // winners who let the deadline pass
	Duplicates int64            `json:"duplicate_clicks"`
	// Decision latencies of POST /orders (any answer), sorted.
	Latencies []time.Duration `json:"-"`
	// ByAnswer holds the same latencies split by answer (the keys of
	// Answers), sorted: an admitted buyer's wait and a shed one's are
	// different questions.
	ByAnswer map[string][]time.Duration `json:"-"`
	// TimeToReserveAll is when reservations first reached Units (0 if never).
	TimeToReserveAll time.Duration `json:"time_to_reserve_all"`
	Elapsed          time.Duration `json:"elapsed"`
	// Timeline samples reservations and payments over time, for charts.
	Timeline []Sample `json:"timeline"`
}

// Sample is one point of the timeline.
type Sample struct {
	At       time.Duration `json:"at"`
	Reserved int64         `json:"reserved"`
	Paid     int64         `json:"paid"`
}

// Percentile returns the p-th latency (0 < p < 1).
func (r Result) Percentile(p float64) time.Duration {
	if len(r.Latencies) == 0 {
		return 0
	}
	return r.Latencies[int(p*float64(len(r.Latencies)-1))]
}

type run struct {
	cfg   Config
	start time.Time

	mu        sync.Mutex
	answers   map[string]int64
	latencies []time.Duration
	byAnswer  map[string][]time.Duration
	timeline  []Sample

	requests, reserved, paid, cancelled, unpaid, dups atomic.Int64
	allReservedAt                                     atomic.Int64
	inflight                                          chan struct{}
	soldOut                                           atomic.Bool // every unit paid: nothing left to buy
}

// Run plays the sale until every unit is paid or the deadline passes, then
// waits for the winners' payments and cancels to finish.
func Run(ctx context.Context, cfg Config) (Result, error) {
	if cfg.BaseURL == "" || cfg.SKU == "" || cfg.Buyers <= 0 || cfg.Units <= 0 || cfg.Tokens == nil {
		return Result{}, errors.New("loadgen: BaseURL, SKU, Buyers, Units and Tokens are required")
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 64
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
			MaxIdleConnsPerHost: cfg.Concurrency, MaxConnsPerHost: cfg.Concurrency * 2,
		}}
	}
	if cfg.Deadline <= 0 {
		cfg.Deadline = time.Minute
	}
	r := &run{cfg: cfg, start: time.Now(), answers: map[string]int64{}, byAnswer: map[string][]time.Duration{}}
	ctx, cancel := context.WithTimeout(ctx, cfg.Deadline)
	defer cancel()

	stopSampling := r.sample(ctx)
	// Every buyer is its own goroutine (a sleeping buyer costs nothing);
	// the semaphore bounds requests in flight, like a client connection pool.
	r.inflight = make(chan struct{}, cfg.Concurrency)
	var wg sync.WaitGroup
	var winners sync.WaitGroup
	for i := range cfg.Buyers {
		wg.Go(func() { r.buyer(ctx, i, &winners) })
	}
	wg.Wait()
	winners.Wait()
	stopSampling()

	res := Result{
		Requests: r.requests.Load(), Answers: r.answers, Reserved: r.reserved.Load(),
		Paid: r.paid.Load(), Cancelled: r.cancelled.Load(), LeftUnpaid: r.unpaid.Load(),
		Duplicates: r.dups.Load(), Latencies: r.latencies, Elapsed: time.Since(r.start),
		Timeline: r.timeline, ByAnswer: r.byAnswer,
	}
	if at := r.allReservedAt.Load(); at > 0 {
		res.TimeToReserveAll = time.Duration(at)
	}
	slices.Sort(res.Latencies)
	for _, l := range res.ByAnswer {
		slices.Sort(l)
	}
	return res, nil
}

// sample records the timeline every 250 ms until stopped.
func (r *run) sample(ctx context.Context) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		for {
			s := Sample{At: time.Since(r.start), Reserved: r.reserved.Load(), Paid: r.paid.Load()}
			r.mu.Lock()
			r.timeline = append(r.timeline, s)
			r.mu.Unlock()
			if r.cfg.OnProgress != nil {
				r.cfg.OnProgress(Progress{Reserved: s.Reserved, Paid: s.Paid})
			}
			select {
			case <-t.C:
			case <-done:
				return
			}
		}
	})
	return func() { close(done); wg.Wait() }
}

// buyer keeps trying until it holds a unit, the sale is over or the
// deadline passes. Busy answers retry the same order id; a sold-out answer
// waits and tries again with a new order id, because released units come
// back on sale.
func (r *run) buyer(ctx context.Context, n int, winners *sync.WaitGroup) {
	rng := rand.New(rand.NewPCG(r.cfg.Seed, uint64(n)))
	user := fmt.Sprintf("user-%d", n)
	// Logged in for the whole sale and the payment window after it.
	token, err := r.cfg.Tokens.Token(user, r.cfg.Deadline+time.Hour)
	if err != nil {
		return
	}
	auth := http.Header{"Authorization": {"Bearer " + token}}
	for ctx.Err() == nil && !r.soldOut.Load() {
		orderID := uuid.Must(uuid.NewV7()).String()
		a := r.placeWithClicks(ctx, rng, auth, orderID)
		status, body, err := a.status, a.body, a.err
		switch {
		case err != nil:
			Sleep(ctx, 200*time.Millisecond)
			continue
		case status == http.StatusCreated:
			var o struct {
				OrderID string `json:"order_id"`
				Amount  int64  `json:"amount"`
			}
			_ = json.Unmarshal(body, &o)
			got := r.reserved.Add(1)
			if got == r.cfg.Units {
				r.allReservedAt.CompareAndSwap(0, int64(time.Since(r.start)))
			}
			firstRound := got <= r.cfg.Units
			winners.Go(func() { r.winner(ctx, rng.Float64(), firstRound, auth, o.OrderID, o.Amount) })
			return
		case status == http.StatusTooManyRequests:
			// Same order id next time would also be fine; a fresh one is
			// simpler and the API treats both the same.
			Sleep(ctx, retryAfter(a, rng))
		case status == http.StatusUnprocessableEntity:
			return // per-user limit: this user already holds a unit
		default: // 409 SOLD_OUT and anything else: wait for released units
			Sleep(ctx, time.Duration(1000+rng.IntN(1000))*time.Millisecond)
		}
	}
}

// retryAfter is how long a buyer told 429 waits: the answer's Retry-After,
// as a client following the API's contract does (one that ignored it and
// came back in a quarter of a second, as this crowd did until 2026-12-03,
// made five buyers' worth of retries per buyer and a storm the API spent
// its CPU answering), or a guess where the answer has none; plus up to
// 200 ms of jitter so the crowd does not come back in step.
func retryAfter(a answer, rng *rand.Rand) time.Duration {
	base := a.retryAfter
	switch {
	case base > 0:
	case a.code == "RATE_LIMITED":
		base = time.Second
	default:
		base = 250 * time.Millisecond
	}
	return base + time.Duration(rng.IntN(200))*time.Millisecond
}

// placeWithClicks sends the order, sometimes twice at once with the same
// order id, and returns the first answer.
func (r *run) placeWithClicks(ctx context.Context, rng *rand.Rand, auth http.Header, orderID string) answer {
	body, _ := json.Marshal(map[string]any{
		"client_order_id": orderID, "items": []map[string]any{{"sku_id": r.cfg.SKU, "quantity": 1}},
	})
	if rng.Float64() >= r.cfg.DuplicateClickShare {
		return r.place(ctx, auth, body)
	}
	r.dups.Add(1)
	ch := make(chan answer, 2)
	for range 2 {
		go func() { ch <- r.place(ctx, auth, body) }()
	}
	a, b := <-ch, <-ch
	// Both clicks carry the same order id: a 201 on either means this
	// buyer holds exactly one unit.
	if b.status == http.StatusCreated {
		a = b
	}
	return a
}

func (r *run) place(ctx context.Context, auth http.Header, body []byte) answer {
	select {
	case r.inflight <- struct{}{}:
	case <-ctx.Done():
		return answer{err: ctx.Err()}
	}
	t0 := time.Now()
	res, err := jsoncall.Do(ctx, r.cfg.Client, http.MethodPost, r.cfg.BaseURL+"/api/v1/orders", body, auth)
	<-r.inflight
	if err != nil {
		return answer{err: err}
	}
	lat := time.Since(t0)
	key := res.Key()
	r.requests.Add(1)
	r.mu.Lock()
	r.answers[key]++
	r.latencies = append(r.latencies, lat)
	r.byAnswer[key] = append(r.byAnswer[key], lat)
	r.mu.Unlock()
	a := answer{status: res.Status, code: res.Code(), body: res.Body}
	if secs, err := strconv.Atoi(res.Header.Get("Retry-After")); err == nil && secs > 0 {
		a.retryAfter = time.Duration(secs) * time.Second
	}
	return a
}

// answer is what a buy request got back.
type answer struct {
	status int
	code   string
	body   []byte
	// retryAfter is the answer's Retry-After; zero without one.
	retryAfter time.Duration
	err        error
}

// winner pays, cancels, or walks away.
func (r *run) winner(ctx context.Context, roll float64, firstRound bool, auth http.Header, orderID string, amount int64) {
	// The winner acts even after the buying deadline: its order is real.
	ctx = context.WithoutCancel(ctx)
	switch {
	case !firstRound || roll < r.cfg.PayShare:
		Sleep(ctx, r.cfg.PaymentDelay)
		if r.pay(ctx, orderID, amount) {
			if r.paid.Add(1) >= r.cfg.Units {
				r.soldOut.Store(true)
			}
		}
	case roll < r.cfg.PayShare+r.cfg.CancelShare:
		res, err := r.do(ctx, http.MethodPost, "/api/v1/orders/"+orderID+"/cancel", nil, auth)
		if err == nil && res.Status == http.StatusOK {
			r.cancelled.Add(1)
		}
	default:
		r.unpaid.Add(1)
	}
}

// pay sends a signed provider callback, retrying as a provider does.
func (r *run) pay(ctx context.Context, orderID string, amount int64) bool {
	body, _ := json.Marshal(httpapi.Callback{
		OrderID: orderID, TransactionID: "txn-" + orderID, Amount: amount, Status: httpapi.CallbackSuccess,
	})
	for range 20 {
		hdr := http.Header{httpapi.SignatureHeader: {httpapi.Sign(r.cfg.WebhookSecret, time.Now(), body)}}
		res, err := r.do(ctx, http.MethodPost, "/api/v1/payments/callback", body, hdr)
		if err == nil && res.Status == http.StatusOK {
			var out struct {
				Status string `json:"status"`
			}
			_ = json.Unmarshal(res.Body, &out)
			return out.Status == "PAID"
		}
		Sleep(ctx, 200*time.Millisecond)
	}
	return false
}

func (r *run) do(ctx context.Context, method, path string, body []byte, hdr http.Header) (jsoncall.Answer, error) {
	return jsoncall.Do(ctx, r.cfg.Client, method, r.cfg.BaseURL+path, body, hdr)
}

// Sleep waits d or until ctx ends, whichever comes first.
func Sleep(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
