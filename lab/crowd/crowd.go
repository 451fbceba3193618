// Package crowd plays a sale's buyers against the HTTP API for the fault and
// scale-out suites. Unlike loadgen, a buyer whose request failed without an
// answer (connection refused or reset, a 5xx such as a load balancer's 502
// for an API killed mid-request) retries with the SAME order id: the only
// safe retry when the order may already exist. The suites then compare what
// each buyer was told (Orders) with the database.
package crowd

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/flashsale/flashsale/internal/jsoncall"
	"github.com/flashsale/flashsale/internal/loadgen"
)

// Crowd is a sale's buyers. Set the options before Run; read the counters
// and Orders after it.
type Crowd struct {
	Base   string // the API's base URL
	SKU    string
	Units  int64
	Buyers int
	// PayShare and CancelShare of first-round winners pay or cancel; the
	// rest let the deadline pass. Later winners always pay, so the sale
	// converges.
	PayShare, CancelShare float64
	// Deadline bounds the sale. The crowd keeps buying until the SKU is
	// settled and sold out (Units sold, none held; see watch), so a unit
	// that comes back late is bought again and "undersold" means a unit
	// nobody could buy. Deadline is the generous limit on that, reached
	// only when something is wrong; StoppedBy says which ended the sale.
	Deadline time.Duration
	// Callbacks turns on the provider's oddities: duplicates, a reordered
	// FAILED and a second transaction after payment, late money for
	// expired orders, and payments at the exact deadline.
	Callbacks bool
	// WebhookSecret signs payment callbacks; Auth is a buyer's
	// Authorization header (the suite mints tokens its own way).
	WebhookSecret string
	Auth          func(user string) http.Header
	Client        *http.Client

	mu sync.Mutex
	// Orders is what each buyer was told, by order id; Answers counts
	// answers by "status code". Read them after Run.
	Orders  map[string]*Order
	Answers map[string]int

	Requests, Reserved, Paid, ConnRetries atomic.Int64
	// OddCallbacks counts the Callbacks oddities sent.
	OddCallbacks atomic.Int64
	// Pay5xx counts payment callbacks answered 5xx (the provider must
	// retry them, perhaps after the deadline); PayQueued those answered
	// 202 (the order took the payment and settles it on its own).
	Pay5xx, PayQueued atomic.Int64
	// SoldOut: every unit is sold and none is held; the buyers stop.
	SoldOut atomic.Bool
	// StoppedBy is why the sale ended: "sold out" or "limit". Read after Run.
	StoppedBy string

	// successes are the times of successful answers (a reservation, a
	// payment answered PAID), for the time a fault took to recover from.
	successes []time.Time
}

// Order is what the buyer was told about one order.
type Order struct {
	ID     string
	User   string
	Amount int64
	PayBy  time.Time
	Action string // pay, cancel, expire, deadline-pay
	// Paid: a callback was answered PAID. Cancelled: cancel answered 200.
	Paid, Cancelled bool
	// LateTxns are transactions sent after the order closed (or a second
	// transaction after it was paid), by transaction id, with whether the
	// answer said refund REQUIRED.
	LateTxns map[string]bool
	// DeadlineAnswer is the status answered to a payment sent at pay_by.
	DeadlineAnswer string
	// PaySentAt is when the winner first sent its payment (pay,
	// last-second-pay), for the rule that money sent in time is kept.
	PaySentAt time.Time
}

// New is a crowd of buyers for sku on the API at base, with the fault
// suite's defaults: 60% of first winners pay, 15% cancel, at most 5 minutes
// of buying.
func New(base, sku string, units int64, buyers int, webhookSecret string, auth func(user string) http.Header) *Crowd {
	return &Crowd{
		Base: base, SKU: sku, Units: units, Buyers: buyers,
		PayShare: 0.6, CancelShare: 0.15, Deadline: 5 * time.Minute,
		WebhookSecret: webhookSecret, Auth: auth,
		Client: &http.Client{Timeout: 40 * time.Second, Transport: &http.Transport{
			MaxIdleConnsPerHost: 256, MaxConnsPerHost: 512,
		}},
		Orders: map[string]*Order{}, Answers: map[string]int{},
	}
}

// Each calls fn with every order told so far, under the crowd's lock, so it
// is safe while Run goes on for the fields set before an order is listed
// (ID, User, Amount, PayBy, Action); the winner's outcome fields are written
// without the lock and are for after Run.
func (c *Crowd) Each(fn func(o *Order)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, o := range c.Orders {
		fn(o)
	}
}

// Start runs the crowd (Run) in the background, while a suite injects its
// faults, and returns a channel closed once Run has returned.
func (c *Crowd) Start(ctx context.Context) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.Run(ctx)
	}()
	return done
}

// Run plays the sale until every unit is sold and none is held, or the
// Deadline limit passes, and returns when every winner has paid, cancelled
// or walked away.
func (c *Crowd) Run(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, c.Deadline)
	defer cancel()
	watchCtx, stopWatch := context.WithCancel(ctx)
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		c.watch(watchCtx)
	}()
	var buyers, winners sync.WaitGroup
	for i := range c.Buyers {
		buyers.Go(func() { c.buyer(ctx, i, &winners) })
	}
	buyers.Wait()
	winners.Wait()
	stopWatch()
	<-watched
	c.StoppedBy = "limit"
	if c.SoldOut.Load() {
		c.StoppedBy = "sold out"
	}
}

// watch reads the SKU's stock twice a second, as anyone may, and sets
// SoldOut once Units are sold and nothing is held: only then is there
// nothing left to buy. A unit on its way back (an expiry compensating
// after a fault) keeps the buyers buying.
func (c *Crowd) watch(ctx context.Context) {
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		res, err := c.Do(ctx, http.MethodGet, "/api/v1/inventory/"+c.SKU, nil, nil)
		if err != nil || res.Status != http.StatusOK {
			continue
		}
		var inv struct {
			Sold   int64 `json:"sold"`
			Frozen int64 `json:"frozen"`
		}
		if json.Unmarshal(res.Body, &inv) == nil && inv.Sold >= c.Units && inv.Frozen == 0 {
			c.SoldOut.Store(true)
			return
		}
	}
}

// succeeded notes a successful answer at now.
func (c *Crowd) succeeded() {
	c.mu.Lock()
	c.successes = append(c.successes, time.Now())
	c.mu.Unlock()
}

// FirstSuccessAfter is the first successful answer (a reservation or a
// payment answered PAID) at or after t: when the sale was working again
// after a fault at t.
func (c *Crowd) FirstSuccessAfter(t time.Time) (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var first time.Time
	for _, at := range c.successes {
		if !at.Before(t) && (first.IsZero() || at.Before(first)) {
			first = at
		}
	}
	return first, !first.IsZero()
}

func (c *Crowd) buyer(ctx context.Context, n int, winners *sync.WaitGroup) {
	rng := rand.New(rand.NewPCG(uint64(n), 7))
	user := fmt.Sprintf("buyer-%d", n)
	// Spread the start over a second, like a crowd at the opening bell.
	loadgen.Sleep(ctx, time.Duration(rng.IntN(1000))*time.Millisecond)
	for ctx.Err() == nil && !c.SoldOut.Load() {
		orderID := uuid.Must(uuid.NewV7()).String()
		status, code, body := c.Place(ctx, rng, user, orderID)
		switch {
		case status == http.StatusCreated:
			var o struct {
				OrderID string    `json:"order_id"`
				Amount  int64     `json:"amount"`
				PayBy   time.Time `json:"pay_by"`
			}
			_ = json.Unmarshal(body, &o)
			c.succeeded()
			got := c.Reserved.Add(1)
			co := &Order{ID: o.OrderID, User: user, Amount: o.Amount, PayBy: o.PayBy, LateTxns: map[string]bool{}}
			roll := rng.Float64()
			switch {
			case got > c.Units || roll < c.PayShare:
				co.Action = "pay"
				switch {
				case c.Callbacks && roll < 0.25 && got <= c.Units:
					co.Action = "deadline-pay"
				case c.Callbacks && roll < 0.4 && got <= c.Units:
					co.Action = "last-second-pay"
				}
			case roll < c.PayShare+c.CancelShare:
				co.Action = "cancel"
			default:
				co.Action = "expire"
			}
			c.mu.Lock()
			c.Orders[co.ID] = co
			c.mu.Unlock()
			winners.Go(func() { c.winner(context.WithoutCancel(ctx), co) })
			return
		case status == http.StatusUnprocessableEntity && code == "LIMIT_EXCEEDED":
			return
		case status == 0:
			return // the deadline passed while retrying
		default: // SOLD_OUT, UNKNOWN_SKU while Redis is being restored, ...
			loadgen.Sleep(ctx, time.Duration(800+rng.IntN(800))*time.Millisecond)
		}
	}
}

// Place sends one buy request as user and retries it, with the same order
// id, until it gets an answer that is not "try again".
func (c *Crowd) Place(ctx context.Context, rng *rand.Rand, user, orderID string) (int, string, []byte) {
	body, _ := json.Marshal(map[string]any{
		"client_order_id": orderID, "items": []map[string]any{{"sku_id": c.SKU, "quantity": 1}},
	})
	for ctx.Err() == nil {
		res, err := c.Do(ctx, http.MethodPost, "/api/v1/orders", body, c.Auth(user))
		if err != nil {
			// No answer: the order may exist. Same order id again.
			c.ConnRetries.Add(1)
			loadgen.Sleep(ctx, 300*time.Millisecond)
			continue
		}
		c.Requests.Add(1)
		c.mu.Lock()
		c.Answers[res.Key()]++
		c.mu.Unlock()
		switch {
		case res.Status == http.StatusTooManyRequests:
			loadgen.Sleep(ctx, time.Duration(250+rng.IntN(250))*time.Millisecond)
		case res.Status >= 500:
			loadgen.Sleep(ctx, 500*time.Millisecond)
		default:
			return res.Status, res.Code(), res.Body
		}
	}
	return 0, "", nil
}

// Do sends one request to the API as a buyer's client does.
func (c *Crowd) Do(ctx context.Context, method, path string, body []byte, hdr http.Header) (jsoncall.Answer, error) {
	return jsoncall.Do(ctx, c.Client, method, c.Base+path, body, hdr)
}
