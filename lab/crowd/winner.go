package crowd

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/flashsale/flashsale/internal/httpapi"
	"github.com/flashsale/flashsale/internal/loadgen"
)

// winner pays, cancels or walks away, and in callbacks mode adds the
// provider's oddities.
func (c *Crowd) winner(ctx context.Context, o *Order) {
	txn := "txn-" + o.ID
	switch o.Action {
	case "pay":
		loadgen.Sleep(ctx, 300*time.Millisecond)
		o.PaySentAt = time.Now()
		var st string
		if c.Callbacks {
			// The provider delivers the same success three times at once.
			var wg sync.WaitGroup
			var mu sync.Mutex
			for range 3 {
				wg.Go(func() {
					s, _ := c.pay(ctx, o, txn, o.Amount, "SUCCESS", 30*time.Second)
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
			st, _ = c.pay(ctx, o, txn, o.Amount, "SUCCESS", 60*time.Second)
		}
		o.Paid = st == "PAID"
		if o.Paid {
			c.Paid.Add(1)
		}
		if c.Callbacks && o.Paid {
			// Reordered: a FAILED attempt delivered after the success must
			// change nothing; then a second transaction is money to refund.
			_, _ = c.pay(ctx, o, txn+"-attempt0", o.Amount, "FAILED", 30*time.Second)
			_, refund := c.pay(ctx, o, txn+"-second", o.Amount, "SUCCESS", 30*time.Second)
			o.LateTxns[txn+"-second"] = refund
			c.OddCallbacks.Add(2)
		}
	case "deadline-pay":
		// The payment lands at the exact deadline: either it wins (PAID) or
		// the timer did (refund), never both and never neither.
		loadgen.Sleep(ctx, time.Until(o.PayBy))
		st, refund := c.pay(ctx, o, txn, o.Amount, "SUCCESS", 60*time.Second)
		o.DeadlineAnswer = st
		if refund {
			o.DeadlineAnswer += "+refund"
		}
		o.Paid = st == "PAID" && !refund
		if o.Paid {
			c.Paid.Add(1)
		}
		c.OddCallbacks.Add(1)
	case "last-second-pay":
		// The buyer pays a second before the deadline: the money reached
		// the API in time, so it must be kept, however busy the order.
		loadgen.Sleep(ctx, time.Until(o.PayBy.Add(-time.Second)))
		o.PaySentAt = time.Now()
		st, _ := c.pay(ctx, o, txn, o.Amount, "SUCCESS", 60*time.Second)
		o.Paid = st == "PAID"
		if o.Paid {
			c.Paid.Add(1)
		}
		c.OddCallbacks.Add(1)
	case "cancel":
		for ctx.Err() == nil {
			res, err := c.Do(ctx, http.MethodPost, "/api/v1/orders/"+o.ID+"/cancel", nil, c.Auth(o.User))
			if err == nil && res.Status < 500 {
				o.Cancelled = res.Status == http.StatusOK
				break
			}
			loadgen.Sleep(ctx, 300*time.Millisecond)
		}
	case "expire":
		if !c.Callbacks {
			return
		}
		// Late money, twice (a provider retry): refunded exactly once.
		loadgen.Sleep(ctx, time.Until(o.PayBy)+3*time.Second)
		for range 2 {
			_, refund := c.pay(ctx, o, txn+"-late", o.Amount, "SUCCESS", 60*time.Second)
			o.LateTxns[txn+"-late"] = refund
		}
		c.OddCallbacks.Add(2)
	}
}

// pay sends a signed callback for o, retrying (same transaction) on no
// answer or a 5xx as a provider does, and returns the order status answered
// and whether a refund was required. A 202 (the order took the payment to
// settle on its own) is followed by reading the order as its buyer until
// the transaction's outcome shows.
func (c *Crowd) pay(ctx context.Context, o *Order, txn string, amount int64, status string, budget time.Duration) (string, bool) {
	body, _ := json.Marshal(httpapi.Callback{OrderID: o.ID, TransactionID: txn, Amount: amount, Status: status})
	end := time.Now().Add(budget)
	for time.Now().Before(end) {
		hdr := http.Header{httpapi.SignatureHeader: {httpapi.Sign(c.WebhookSecret, time.Now(), body)}}
		res, err := c.Do(ctx, http.MethodPost, "/api/v1/payments/callback", body, hdr)
		switch {
		case err == nil && res.Status == http.StatusOK:
			var out struct {
				Status string `json:"status"`
				Refund string `json:"refund"`
			}
			_ = json.Unmarshal(res.Body, &out)
			if out.Status == "PAID" && out.Refund == "" {
				c.succeeded()
			}
			return out.Status, out.Refund == "REQUIRED"
		case err == nil && res.Status == http.StatusAccepted:
			c.PayQueued.Add(1)
			return c.settled(ctx, o, txn, end)
		case err == nil && res.Status < 500:
			return fmt.Sprintf("HTTP %d %s", res.Status, res.Body), false
		case err == nil:
			c.Pay5xx.Add(1)
		}
		loadgen.Sleep(ctx, 300*time.Millisecond)
	}
	return "NO ANSWER", false
}

// settled reads o as its buyer until txn's outcome is among its payments
// (or end passes), and returns it as pay does.
func (c *Crowd) settled(ctx context.Context, o *Order, txn string, end time.Time) (string, bool) {
	for time.Now().Before(end) {
		res, err := c.Do(ctx, http.MethodGet, "/api/v1/orders/"+o.ID, nil, c.Auth(o.User))
		if err == nil && res.Status == http.StatusOK {
			var view struct {
				Payments []struct {
					TransactionID string `json:"transaction_id"`
					Status        string `json:"order_status"`
					Refund        string `json:"refund"`
				} `json:"payments"`
			}
			_ = json.Unmarshal(res.Body, &view)
			for _, p := range view.Payments {
				if p.TransactionID == txn {
					if p.Status == "PAID" && p.Refund == "" {
						c.succeeded()
					}
					return p.Status, p.Refund == "REQUIRED"
				}
			}
		}
		loadgen.Sleep(ctx, 200*time.Millisecond)
	}
	return "NO OUTCOME", false
}
