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
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/flashsale/flashsale/internal/httpapi"
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
	// Deadline ends the buying (winners still pay, cancel or wait).
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
	SoldOut      atomic.Bool
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
}

// New is a crowd of buyers for sku on the API at base, with the fault
// suite's defaults: 60% of first winners pay, 15% cancel, 90 s of buying.
func New(base, sku string, units int64, buyers int, webhookSecret string, auth func(user string) http.Header) *Crowd {
	return &Crowd{
		Base: base, SKU: sku, Units: units, Buyers: buyers,
		PayShare: 0.6, CancelShare: 0.15, Deadline: 90 * time.Second,
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

// Run plays the sale until every unit is paid or the deadline passes, and
// returns when every winner has paid, cancelled or walked away.
func (c *Crowd) Run(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, c.Deadline)
	defer cancel()
	var buyers, winners sync.WaitGroup
	for i := range c.Buyers {
		buyers.Go(func() { c.buyer(ctx, i, &winners) })
	}
	buyers.Wait()
	winners.Wait()
}

func (c *Crowd) buyer(ctx context.Context, n int, winners *sync.WaitGroup) {
	rng := rand.New(rand.NewPCG(uint64(n), 7))
	user := fmt.Sprintf("buyer-%d", n)
	// Spread the start over a second, like a crowd at the opening bell.
	sleep(ctx, time.Duration(rng.IntN(1000))*time.Millisecond)
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
			got := c.Reserved.Add(1)
			co := &Order{ID: o.OrderID, User: user, Amount: o.Amount, PayBy: o.PayBy, LateTxns: map[string]bool{}}
			roll := rng.Float64()
			switch {
			case got > c.Units || roll < c.PayShare:
				co.Action = "pay"
				if c.Callbacks && roll < 0.25 && got <= c.Units {
					co.Action = "deadline-pay"
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
			sleep(ctx, time.Duration(800+rng.IntN(800))*time.Millisecond)
		}
	}
}

// Place sends one buy request as user and retries it, with the same order
// id, until it gets an answer that is not "try again".
func (c *Crowd) Place(ctx context.Context, rng *rand.Rand, user, orderID string) (int, string, []byte) {
	body, _ := json.Marshal(map[string]any{
		"order_id": orderID, "items": []map[string]any{{"sku_id": c.SKU, "quantity": 1}},
	})
	for ctx.Err() == nil {
		status, resp, err := c.Do(ctx, http.MethodPost, "/api/v1/orders", body, c.Auth(user))
		if err != nil {
			// No answer: the order may exist. Same order id again.
			c.ConnRetries.Add(1)
			sleep(ctx, 300*time.Millisecond)
			continue
		}
		var e struct {
			Code string `json:"code"`
		}
		_ = json.Unmarshal(resp, &e)
		c.Requests.Add(1)
		c.mu.Lock()
		c.Answers[strconv.Itoa(status)+" "+e.Code]++
		c.mu.Unlock()
		switch {
		case status == http.StatusTooManyRequests:
			sleep(ctx, time.Duration(250+rng.IntN(250))*time.Millisecond)
		case status >= 500:
			sleep(ctx, 500*time.Millisecond)
		default:
			return status, e.Code, resp
		}
	}
	return 0, "", nil
}

// winner pays, cancels or walks away, and in callbacks mode adds the
// provider's oddities.
func (c *Crowd) winner(ctx context.Context, o *Order) {
	txn := "txn-" + o.ID
	switch o.Action {
	case "pay":
		sleep(ctx, 300*time.Millisecond)
		var st string
		if c.Callbacks {
			// The provider delivers the same success three times at once.
			var wg sync.WaitGroup
			var mu sync.Mutex
			for range 3 {
				wg.Go(func() {
					s, _ := c.pay(ctx, o.ID, txn, o.Amount, "SUCCESS", 30*time.Second)
					mu.Lock()
					if s == "PAID" || st == "" {
						st = s
					}
					mu.Unlock()
				})
			}
			wg.Wait()
			c.OddCallbacks.Add(2)
		} else {
			st, _ = c.pay(ctx, o.ID, txn, o.Amount, "SUCCESS", 60*time.Second)
		}
		o.Paid = st == "PAID"
		if o.Paid && c.Paid.Add(1) >= c.Units {
			c.SoldOut.Store(true)
		}
		if c.Callbacks && o.Paid {
			// Reordered: a FAILED attempt delivered after the success must
			// change nothing; then a second transaction is money to refund.
			_, _ = c.pay(ctx, o.ID, txn+"-attempt0", o.Amount, "FAILED", 30*time.Second)
			_, refund := c.pay(ctx, o.ID, txn+"-second", o.Amount, "SUCCESS", 30*time.Second)
			o.LateTxns[txn+"-second"] = refund
			c.OddCallbacks.Add(2)
		}
	case "deadline-pay":
		// The payment lands at the exact deadline: either it wins (PAID) or
		// the timer did (refund), never both and never neither.
		sleep(ctx, time.Until(o.PayBy))
		st, refund := c.pay(ctx, o.ID, txn, o.Amount, "SUCCESS", 60*time.Second)
		o.DeadlineAnswer = st
		if refund {
			o.DeadlineAnswer += "+refund"
		}
		o.Paid = st == "PAID" && !refund
		if o.Paid && c.Paid.Add(1) >= c.Units {
			c.SoldOut.Store(true)
		}
		c.OddCallbacks.Add(1)
	case "cancel":
		for ctx.Err() == nil {
			status, _, err := c.Do(ctx, http.MethodPost, "/api/v1/orders/"+o.ID+"/cancel", nil, c.Auth(o.User))
			if err == nil && status < 500 {
				o.Cancelled = status == http.StatusOK
				break
			}
			sleep(ctx, 300*time.Millisecond)
		}
	case "expire":
		if !c.Callbacks {
			return
		}
		// Late money, twice (a provider retry): refunded exactly once.
		sleep(ctx, time.Until(o.PayBy)+3*time.Second)
		for range 2 {
			_, refund := c.pay(ctx, o.ID, txn+"-late", o.Amount, "SUCCESS", 60*time.Second)
			o.LateTxns[txn+"-late"] = refund
		}
		c.OddCallbacks.Add(2)
	}
}

// pay sends a signed callback, retrying (same transaction) on no answer or
// a 5xx as a provider does, and returns the order status answered and
// whether a refund was required.
func (c *Crowd) pay(ctx context.Context, orderID, txn string, amount int64, status string, budget time.Duration) (string, bool) {
	body, _ := json.Marshal(map[string]any{"order_id": orderID, "transaction_id": txn, "amount": amount, "status": status})
	end := time.Now().Add(budget)
	for time.Now().Before(end) {
		hdr := http.Header{httpapi.SignatureHeader: {httpapi.Sign(c.WebhookSecret, time.Now(), body)}}
		code, resp, err := c.Do(ctx, http.MethodPost, "/api/v1/payments/callback", body, hdr)
		if err == nil && code == http.StatusOK {
			var out struct {
				Status string `json:"status"`
				Refund string `json:"refund"`
			}
			_ = json.Unmarshal(resp, &out)
			return out.Status, out.Refund == "REQUIRED"
		}
		if err == nil && code < 500 {
			return fmt.Sprintf("HTTP %d %s", code, resp), false
		}
		sleep(ctx, 300*time.Millisecond)
	}
	return "NO ANSWER", false
}

// Do sends one request to the API as a buyer's client does.
func (c *Crowd) Do(ctx context.Context, method, path string, body []byte, hdr http.Header) (int, []byte, error) {
	return loadgen.Do(ctx, c.Client, method, c.Base+path, body, hdr)
}

func sleep(ctx context.Context, d time.Duration) {
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
