package demo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flashsale/flashsale/activities/contract"
	"github.com/flashsale/flashsale/internal/httpapi"
	"github.com/flashsale/flashsale/internal/jsoncall"
	"github.com/flashsale/flashsale/internal/loadgen"
	"github.com/flashsale/flashsale/internal/sale"
	"github.com/flashsale/flashsale/workflows"
)

// A queued sale (starter demo --queue, docs/design/fair-sale.md): the SKU's
// SaleWorkflow opens it on its own timer, buyers enter the pre-queue, are
// ranked by the committed seed at the open, and buy with the passes the
// serving counter hands out in rank order; buyers told SOLD_OUT join the
// waitlist (in rank order) and pay the unit it offers them. When the crowd
// is done the operator closes the sale, and the workflow waits for the last
// order, checks MySQL and Redis agree, reports and removes the sale's Redis
// keys.

// QueueSummary is what a queued sale adds to the Summary: the sale
// workflow's report and what the crowd saw of the queue.
type QueueSummary struct {
	// SaleWorkflow is the sale's workflow id, listed beside its orders in
	// the Web UI (SkuIds).
	SaleWorkflow string               `json:"sale_workflow"`
	SeedHash     string               `json:"seed_hash"`
	Seed         string               `json:"seed"`
	Report       *contract.SaleReport `json:"report"`
	// LateArrivals entered after the open (ranked after the entrants).
	LateArrivals int64 `json:"late_arrivals"`
	// WinnerRanks are the ranks of the buyers who bought with a pass, in
	// ascending order: a fair queue serves the best ranks.
	WinnerRanks []int64 `json:"winner_ranks"`
	// WaitlistJoined and WaitlistOffers: buyers told SOLD_OUT who joined
	// the waitlist, and the orders released units became for them.
	WaitlistJoined int64 `json:"waitlist_joined"`
	WaitlistOffers int64 `json:"waitlist_offers"`
	// RedisKeysLeft counts the SKU's keys in Redis after the end: 0.
	RedisKeysLeft int `json:"redis_keys_left"`
	// Ended is how long after the close the sale ended (its last order
	// settled, the stock checked, the report recorded, the keys removed).
	Ended time.Duration `json:"ended_after_close"`
}

// QueuedSale runs a sale of o.Units to o.Buyers through a fair queue
// opening o.OpensIn from now (at least 2 s), closes it once the crowd is
// done, waits for its end and summarizes.
func (st *Stack) QueuedSale(ctx context.Context, o SaleOptions) (Summary, error) {
	if err := st.CreateSKU(ctx, o.SKU, o.Units, o.Price, o.Buckets); err != nil {
		return Summary{}, err
	}
	started := st.API.Metrics().WorkflowsStarted
	opensAt := time.Now().Add(max(o.OpensIn, 2*time.Second))
	var view workflows.SaleView
	if err := st.Admin(ctx, http.MethodPost, "/api/v1/admin/skus/"+o.SKU+"/sale",
		map[string]any{"opens_at": opensAt, "pass_ttl_seconds": 15}, &view); err != nil {
		return Summary{}, fmt.Errorf("start the sale: %w", err)
	}
	if o.Progress != nil {
		fmt.Fprintf(o.Progress, "sale workflow %s: pre-queue open, buying opens at %s, seed committed: %s\n",
			workflows.SaleWorkflowID(o.SKU), opensAt.Format(time.TimeOnly), view.SeedHash)
	}

	c := &queueCrowd{st: st, o: o, opensAt: opensAt, answers: map[string]int64{},
		client: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
			MaxIdleConnsPerHost: o.Concurrency, MaxConnsPerHost: o.Concurrency * 2}},
		inflight: make(chan struct{}, o.Concurrency)}
	bar := newProgress(o.Progress, o.Units)
	c.onPaid = func(n int64) { bar.set(-1, n) }
	res := c.run(ctx)
	bar.finish()
	if ctx.Err() != nil {
		return Summary{}, ctx.Err()
	}

	closedAt := time.Now()
	if err := st.Admin(ctx, http.MethodPost, "/api/v1/admin/skus/"+o.SKU+"/sale/close",
		map[string]any{"reason": "demo over"}, nil); err != nil {
		return Summary{}, fmt.Errorf("close the sale: %w", err)
	}
	if o.Progress != nil {
		fmt.Fprintln(o.Progress, "sale closed; its workflow waits for the last order, checks MySQL and Redis agree, reports and removes its Redis keys...")
	}
	wait, cancel := context.WithTimeout(ctx, o.PaymentTimeout+2*time.Minute)
	defer cancel()
	if err := st.Backend.Temporal.GetWorkflow(wait, workflows.SaleWorkflowID(o.SKU), "").Get(wait, &view); err != nil {
		return Summary{}, fmt.Errorf("the sale did not end: %w", err)
	}
	if view.Report == nil {
		return Summary{}, errNoReport
	}
	q := &QueueSummary{SaleWorkflow: workflows.SaleWorkflowID(o.SKU), SeedHash: view.SeedHash, Seed: view.Seed,
		Report: view.Report, Ended: time.Since(closedAt), LateArrivals: c.late.Load(),
		WaitlistJoined: c.joined.Load(), WaitlistOffers: c.offers.Load(), WinnerRanks: c.winnerRanks()}
	var err error
	if q.RedisKeysLeft, err = st.countKeys(ctx, o.SKU); err != nil {
		return Summary{}, err
	}

	s, err := st.summarize(ctx, o, res, started)
	if err != nil {
		return Summary{}, err
	}
	// Redis agreed with MySQL before its keys went (the report's check).
	s.RedisAvailable = view.Report.Available
	s.Queue = q
	return s, nil
}

// countKeys counts the Redis keys of sku's hash tags.
func (st *Stack) countKeys(ctx context.Context, sku string) (int, error) {
	n := 0
	for _, pattern := range []string{"fs:{sku:" + sku + "}*", "fs:{sku:" + sku + ":b*"} {
		iter := st.Backend.Redis.Scan(ctx, 0, pattern, 1000).Iterator()
		for iter.Next(ctx) {
			n++
		}
		if err := iter.Err(); err != nil {
			return 0, fmt.Errorf("count the sale's keys: %w", err)
		}
	}
	return n, nil
}

// queueCrowd is the queued sale's buyers.
type queueCrowd struct {
	st      *Stack
	o       SaleOptions
	opensAt time.Time
	client  *http.Client
	// inflight bounds requests in flight (o.Concurrency).
	inflight chan struct{}
	onPaid   func(int64)

	mu      sync.Mutex
	answers map[string]int64
	ranks   []int64
	lat     []time.Duration

	requests, reserved, paid, cancelled, unpaid, late, joined, offers atomic.Int64
	allReservedAt                                                     atomic.Int64
	start                                                             time.Time
}

// run plays every buyer until the deadline: two payment timeouts after the
// open (released units come back and go down the ranks) and 20 s more.
func (c *queueCrowd) run(ctx context.Context) loadgen.Result {
	c.start = time.Now()
	ctx, cancel := context.WithDeadline(ctx, c.opensAt.Add(2*c.o.PaymentTimeout+20*time.Second))
	defer cancel()
	var wg, winners sync.WaitGroup
	for i := range c.o.Buyers {
		wg.Go(func() { c.buyer(ctx, i, &winners) })
	}
	wg.Wait()
	winners.Wait()
	res := loadgen.Result{Requests: c.requests.Load(), Answers: c.answers, Reserved: c.reserved.Load(),
		Paid: c.paid.Load(), Cancelled: c.cancelled.Load(), LeftUnpaid: c.unpaid.Load(), Elapsed: time.Since(c.start),
		Latencies: c.lat}
	if at := c.allReservedAt.Load(); at > 0 {
		res.TimeToReserveAll = time.Duration(at)
	}
	slices.Sort(res.Latencies)
	return res
}

// place is GET .../queue/me's answer, as the buyer reads it.
type place struct {
	Rank    int64  `json:"rank"`
	Pass    string `json:"pass"`
	Spent   bool   `json:"pass_spent"`
	SoldOut bool   `json:"sold_out"`
	State   string `json:"state"`
	ETA     *int64 `json:"eta_seconds"`
}

// buyer enters the queue (most before the open, a tenth after it), looks
// at their place once a second (as told by the ETA, at most every 5 s),
// buys with their pass, and once told SOLD_OUT joins the waitlist and
// takes the unit it offers.
func (c *queueCrowd) buyer(ctx context.Context, n int, winners *sync.WaitGroup) {
	rng := rand.New(rand.NewPCG(c.o.Seed, uint64(n)))
	user := fmt.Sprintf("user-%d", n)
	token, err := c.st.Buyers.Token(user, time.Until(c.opensAt)+2*c.o.PaymentTimeout+time.Hour)
	if err != nil {
		return
	}
	auth := http.Header{"Authorization": {"Bearer " + token}}
	// Arrivals spread over the pre-queue; a tenth come after the open.
	lead := time.Until(c.opensAt)
	arrive := time.Duration(rng.Float64() * float64(lead))
	if rng.Float64() < 0.1 {
		arrive = lead + time.Duration(rng.IntN(3000))*time.Millisecond
		c.late.Add(1)
	}
	loadgen.Sleep(ctx, arrive)
	if status := c.do(ctx, http.MethodPost, "/api/v1/skus/"+c.o.SKU+"/queue", nil, auth).Status; status != http.StatusCreated && status != http.StatusOK {
		return
	}
	onWaitlist := false
	for ctx.Err() == nil {
		var p place
		if res := c.do(ctx, http.MethodGet, "/api/v1/skus/"+c.o.SKU+"/queue/me", nil, auth); res.Status == http.StatusOK {
			_ = json.Unmarshal(res.Body, &p)
		}
		switch {
		case p.Spent:
			return
		case p.Pass != "" && !p.SoldOut:
			if c.buy(ctx, rng, auth, p, winners) {
				return
			}
		case p.SoldOut && !onWaitlist:
			// A pass held when the buckets emptied buys nothing unless a
			// unit comes back: wait on the waitlist meanwhile.
			status := c.do(ctx, http.MethodPost, "/api/v1/skus/"+c.o.SKU+"/waitlist", nil, auth).Status
			if status == http.StatusCreated || status == http.StatusOK {
				onWaitlist = true
				c.joined.Add(1)
			}
		case onWaitlist:
			if c.takeOffer(ctx, rng, auth, winners) {
				return
			}
		}
		wait := time.Second
		if p.ETA != nil && *p.ETA > 1 {
			wait = min(time.Duration(*p.ETA)*time.Second, 5*time.Second)
		}
		loadgen.Sleep(ctx, wait+time.Duration(rng.IntN(300))*time.Millisecond)
	}
}

// buy spends the pass; it reports whether the buyer is done.
func (c *queueCrowd) buy(ctx context.Context, rng *rand.Rand, auth http.Header, p place, winners *sync.WaitGroup) bool {
	body, _ := json.Marshal(map[string]any{"items": []map[string]any{{"sku_id": c.o.SKU, "quantity": 1}}})
	hdr := http.Header{"Authorization": auth["Authorization"], sale.PassHeader: {p.Pass}}
	for ctx.Err() == nil {
		t0 := time.Now()
		res := c.do(ctx, http.MethodPost, "/api/v1/orders", body, hdr)
		c.count(res, time.Since(t0))
		switch res.Status {
		case http.StatusCreated:
			var o struct {
				OrderID string `json:"order_id"`
				Amount  int64  `json:"amount"`
			}
			_ = json.Unmarshal(res.Body, &o)
			got := c.reserved.Add(1)
			if got == c.o.Units {
				c.allReservedAt.CompareAndSwap(0, int64(time.Since(c.start)))
			}
			c.mu.Lock()
			c.ranks = append(c.ranks, p.Rank)
			c.mu.Unlock()
			// The first round's buyers pay, cancel or walk away as the
			// shares say; a buyer of a unit that came back pays.
			roll := rng.Float64()
			if got > c.o.Units {
				roll = 0
			}
			winners.Go(func() { c.settle(ctx, roll, auth, o.OrderID, o.Amount) })
			return true
		case http.StatusTooManyRequests:
			loadgen.Sleep(ctx, 250*time.Millisecond+time.Duration(rng.IntN(200))*time.Millisecond)
		default:
			return false // sold out, expired: back to the queue
		}
	}
	return true
}

// takeOffer pays the order the waitlist made for the buyer, if any.
func (c *queueCrowd) takeOffer(ctx context.Context, rng *rand.Rand, auth http.Header, winners *sync.WaitGroup) bool {
	res := c.do(ctx, http.MethodGet, "/api/v1/skus/"+c.o.SKU+"/waitlist/me", nil, auth)
	var w struct {
		Offer string `json:"offer_order_id"`
	}
	if res.Status != http.StatusOK || json.Unmarshal(res.Body, &w) != nil || w.Offer == "" {
		return false
	}
	res = c.do(ctx, http.MethodGet, "/api/v1/orders/"+w.Offer, nil, auth)
	var o struct {
		Amount int64 `json:"amount"`
	}
	if res.Status != http.StatusOK || json.Unmarshal(res.Body, &o) != nil {
		return false
	}
	c.offers.Add(1)
	c.reserved.Add(1)
	// A buyer who waited pays what they are offered.
	winners.Go(func() { c.settle(ctx, 0, auth, w.Offer, o.Amount) })
	return true
}

// settle pays, cancels or walks away from an order, as the shares say.
func (c *queueCrowd) settle(ctx context.Context, roll float64, auth http.Header, orderID string, amount int64) {
	ctx = context.WithoutCancel(ctx)
	switch {
	case roll < c.o.PayShare:
		loadgen.Sleep(ctx, 500*time.Millisecond)
		body, _ := json.Marshal(httpapi.Callback{OrderID: orderID, TransactionID: "txn-" + orderID, Amount: amount, Status: httpapi.CallbackSuccess})
		for range 20 {
			hdr := http.Header{httpapi.SignatureHeader: {httpapi.Sign(c.st.Secret, time.Now(), body)}}
			if c.do(ctx, http.MethodPost, "/api/v1/payments/callback", body, hdr).Status == http.StatusOK {
				if n := c.paid.Add(1); c.onPaid != nil {
					c.onPaid(n)
				}
				return
			}
			loadgen.Sleep(ctx, 200*time.Millisecond)
		}
	case roll < c.o.PayShare+c.o.CancelShare:
		if c.do(ctx, http.MethodPost, "/api/v1/orders/"+orderID+"/cancel", nil, auth).Status == http.StatusOK {
			c.cancelled.Add(1)
		}
	default:
		c.unpaid.Add(1)
	}
}

func (c *queueCrowd) count(a jsoncall.Answer, took time.Duration) {
	c.requests.Add(1)
	c.mu.Lock()
	c.answers[a.Key()]++
	c.lat = append(c.lat, took)
	c.mu.Unlock()
}

func (c *queueCrowd) do(ctx context.Context, method, path string, body []byte, hdr http.Header) jsoncall.Answer {
	select {
	case c.inflight <- struct{}{}:
	case <-ctx.Done():
		return jsoncall.Answer{}
	}
	defer func() { <-c.inflight }()
	// No answer counts as status 0, as a crowd's buyer sees it.
	res, _ := jsoncall.Do(ctx, c.client, method, c.st.URL+path, body, hdr)
	return res
}

func (c *queueCrowd) winnerRanks() []int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := slices.Clone(c.ranks)
	slices.Sort(r)
	return r
}

var errNoReport = errors.New("the sale ended without a report")
