//go:build scaleout

package scaleout

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
	"github.com/flashsale/flashsale/internal/identity"
	"github.com/flashsale/flashsale/internal/loadgen"
)

// crowd is a sale's buyers, as in the fault suite (faults/crowd_test.go,
// without its payment-callback oddities). Unlike loadgen, a buyer whose
// request failed without an answer (connection refused or reset, a 5xx
// such as HAProxy's 502 for an API killed mid-request) retries with the
// SAME order id: the only safe retry when the order may already exist.
type crowd struct {
	base   string
	sku    string
	units  int64
	buyers int
	// Shares of first-round winners that pay or cancel; the rest let the
	// deadline pass. Later winners always pay, so the sale converges.
	payShare, cancelShare float64
	deadline              time.Duration
	// callbacks turns on case 7's payment callbacks: duplicates, a
	// reordered FAILED and a second transaction after payment, late money
	// for expired orders, and payments at the exact deadline.
	callbacks bool

	client *http.Client

	mu      sync.Mutex
	orders  map[string]*clientOrder
	answers map[string]int

	requests, reserved, paid, connRetries atomic.Int64
	oddCallbacks                          atomic.Int64
	soldOut                               atomic.Bool
}

// clientOrder is what the buyer was told about one order.
type clientOrder struct {
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

// tokens caches buyers' tokens; mintToken makes one when a user has none
// (the case can swap it for `starter token`, as a newcomer would).
var (
	tokensMu  sync.Mutex
	tokens    = map[string]string{}
	mintToken = func(user string) (string, error) {
		return (&identity.Minter{Secret: []byte(buyerSecret)}).Token(user, time.Hour)
	}
)

// buyerAuth is user's Authorization header, minted with the cluster's
// BUYER_JWT_SECRET as the shop's login service would.
func buyerAuth(user string) http.Header {
	tokensMu.Lock()
	defer tokensMu.Unlock()
	tok, ok := tokens[user]
	if !ok {
		var err error
		if tok, err = mintToken(user); err != nil {
			panic(fmt.Sprintf("mint token for %s: %v", user, err))
		}
		tokens[user] = tok
	}
	return http.Header{"Authorization": {"Bearer " + tok}}
}

func newCrowd(base, sku string, units int64, buyers int) *crowd {
	return &crowd{
		base: base, sku: sku, units: units, buyers: buyers,
		payShare: 0.6, cancelShare: 0.15, deadline: 90 * time.Second,
		client: &http.Client{Timeout: 40 * time.Second, Transport: &http.Transport{
			MaxIdleConnsPerHost: 256, MaxConnsPerHost: 512,
		}},
		orders: map[string]*clientOrder{}, answers: map[string]int{},
	}
}

// run plays the sale until every unit is paid or the deadline passes, and
// returns when every winner has paid, cancelled or walked away.
func (c *crowd) run(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, c.deadline)
	defer cancel()
	var buyers, winners sync.WaitGroup
	for i := range c.buyers {
		buyers.Go(func() { c.buyer(ctx, i, &winners) })
	}
	buyers.Wait()
	winners.Wait()
}

func (c *crowd) buyer(ctx context.Context, n int, winners *sync.WaitGroup) {
	rng := rand.New(rand.NewPCG(uint64(n), 7))
	user := fmt.Sprintf("buyer-%d", n)
	// Spread the start over a second, like a crowd at the opening bell.
	sleep(ctx, time.Duration(rng.IntN(1000))*time.Millisecond)
	for ctx.Err() == nil && !c.soldOut.Load() {
		orderID := uuid.Must(uuid.NewV7()).String()
		status, code, body := c.place(ctx, rng, user, orderID)
		switch {
		case status == http.StatusCreated:
			var o struct {
				OrderID string    `json:"order_id"`
				Amount  int64     `json:"amount"`
				PayBy   time.Time `json:"pay_by"`
			}
			_ = json.Unmarshal(body, &o)
			got := c.reserved.Add(1)
			co := &clientOrder{ID: o.OrderID, User: user, Amount: o.Amount, PayBy: o.PayBy, LateTxns: map[string]bool{}}
			roll := rng.Float64()
			switch {
			case got > c.units || roll < c.payShare:
				co.Action = "pay"
				if c.callbacks && roll < 0.25 && got <= c.units {
					co.Action = "deadline-pay"
				}
			case roll < c.payShare+c.cancelShare:
				co.Action = "cancel"
			default:
				co.Action = "expire"
			}
			c.mu.Lock()
			c.orders[co.ID] = co
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

// place sends one buy request and retries it, with the same order id, until
// it gets an answer that is not "try again".
func (c *crowd) place(ctx context.Context, rng *rand.Rand, user, orderID string) (int, string, []byte) {
	body, _ := json.Marshal(map[string]any{
		"order_id": orderID, "items": []map[string]any{{"sku_id": c.sku, "quantity": 1}},
	})
	for ctx.Err() == nil {
		status, resp, err := c.do(ctx, http.MethodPost, "/api/v1/orders", body, buyerAuth(user))
		if err != nil {
			// No answer: the order may exist. Same order id again.
			c.connRetries.Add(1)
			sleep(ctx, 300*time.Millisecond)
			continue
		}
		var e struct {
			Code string `json:"code"`
		}
		_ = json.Unmarshal(resp, &e)
		c.requests.Add(1)
		c.mu.Lock()
		c.answers[strconv.Itoa(status)+" "+e.Code]++
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
func (c *crowd) winner(ctx context.Context, o *clientOrder) {
	txn := "txn-" + o.ID
	switch o.Action {
	case "pay":
		sleep(ctx, 300*time.Millisecond)
		var st string
		if c.callbacks {
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
			c.oddCallbacks.Add(2)
		} else {
			st, _ = c.pay(ctx, o.ID, txn, o.Amount, "SUCCESS", 60*time.Second)
		}
		o.Paid = st == "PAID"
		if o.Paid && c.paid.Add(1) >= c.units {
			c.soldOut.Store(true)
		}
		if c.callbacks && o.Paid {
			// Reordered: a FAILED attempt delivered after the success must
			// change nothing; then a second transaction is money to refund.
			_, _ = c.pay(ctx, o.ID, txn+"-attempt0", o.Amount, "FAILED", 30*time.Second)
			_, refund := c.pay(ctx, o.ID, txn+"-second", o.Amount, "SUCCESS", 30*time.Second)
			o.LateTxns[txn+"-second"] = refund
			c.oddCallbacks.Add(2)
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
		if o.Paid && c.paid.Add(1) >= c.units {
			c.soldOut.Store(true)
		}
		c.oddCallbacks.Add(1)
	case "cancel":
		for ctx.Err() == nil {
			status, _, err := c.do(ctx, http.MethodPost, "/api/v1/orders/"+o.ID+"/cancel", nil, buyerAuth(o.User))
			if err == nil && status < 500 {
				o.Cancelled = status == http.StatusOK
				break
			}
			sleep(ctx, 300*time.Millisecond)
		}
	case "expire":
		if !c.callbacks {
			return
		}
		// Late money, twice (a provider retry): refunded exactly once.
		sleep(ctx, time.Until(o.PayBy)+3*time.Second)
		for range 2 {
			_, refund := c.pay(ctx, o.ID, txn+"-late", o.Amount, "SUCCESS", 60*time.Second)
			o.LateTxns[txn+"-late"] = refund
		}
		c.oddCallbacks.Add(2)
	}
}

// pay sends a signed callback, retrying (same transaction) on no answer or
// a 5xx as a provider does, and returns the order status answered and
// whether a refund was required.
func (c *crowd) pay(ctx context.Context, orderID, txn string, amount int64, status string, budget time.Duration) (string, bool) {
	body, _ := json.Marshal(map[string]any{"order_id": orderID, "transaction_id": txn, "amount": amount, "status": status})
	end := time.Now().Add(budget)
	for time.Now().Before(end) {
		hdr := http.Header{httpapi.SignatureHeader: {httpapi.Sign(webhookSecret, time.Now(), body)}}
		code, resp, err := c.do(ctx, http.MethodPost, "/api/v1/payments/callback", body, hdr)
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

func (c *crowd) do(ctx context.Context, method, path string, body []byte, hdr http.Header) (int, []byte, error) {
	return loadgen.Do(ctx, c.client, method, c.base+path, body, hdr)
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
