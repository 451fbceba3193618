package demo

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/internal/edge"
	"github.com/flashsale/flashsale/internal/loadgen"
	"github.com/flashsale/flashsale/workflows"
)

// SaleOptions sizes a sale.
type SaleOptions struct {
	SKU         string
	Units       int64
	Price       int64
	Buckets     int
	Buyers      int
	Concurrency int
	// Shares of first-round winners who pay and cancel; the rest let the
	// payment timeout run out.
	PayShare, CancelShare float64
	DuplicateClickShare   float64
	// PaymentTimeout must match the worker's (the stack's config); the
	// sale waits that long for unpaid orders to expire and come back.
	PaymentTimeout time.Duration
	// Progress draws a live bar here when set.
	Progress io.Writer
	Seed     uint64
	// OpensIn is how long a queued sale's pre-queue stays open before
	// buying starts (QueuedSale; at least 2 s).
	OpensIn time.Duration
}

// Summary is what happened, from the clients and from the database.
type Summary struct {
	SKU              string           `json:"sku_id"`
	Stock            int64            `json:"stock"`
	Buyers           int              `json:"buyers"`
	Requests         int64            `json:"requests"`
	Answers          map[string]int64 `json:"answers"`
	Reserved         int64            `json:"orders_reserved"`
	Paid             int64            `json:"paid"`
	Cancelled        int64            `json:"cancelled"`
	Expired          int64            `json:"expired"`
	Pending          int64            `json:"still_pending"`
	BackOnSale       int64            `json:"units_back_on_sale"`
	Sold             int64            `json:"final_sold"`
	Available        int64            `json:"final_available"`
	RedisAvailable   int64            `json:"final_redis_available"`
	Oversold         int64            `json:"oversold"`
	Undersold        int64            `json:"undersold"`
	WorkflowsStarted int64            `json:"workflows_started"`
	Edge             edge.Stats       `json:"edge"`
	P50, P99, P999   time.Duration    `json:"-"`
	TimeToReserveAll time.Duration    `json:"time_to_reserve_all"`
	Elapsed          time.Duration    `json:"elapsed"`
	UIURL            string           `json:"temporal_ui,omitempty"`
	// SalePage is the API's live page of the sale (GET /sale/{sku}).
	SalePage string         `json:"sale_page,omitempty"`
	Load     loadgen.Result `json:"-"`
	// Queue is a queued sale's account (QueuedSale), nil without a queue.
	Queue *QueueSummary `json:"queue,omitempty"`
	// Campaign is a campaign's report (CampaignSale), nil without one.
	Campaign *workflows.CampaignView `json:"campaign,omitempty"`
}

// Sale creates the SKU, lets the crowd buy, waits for every order to settle
// (paid, cancelled or expired), and summarizes from the database.
func (st *Stack) Sale(ctx context.Context, o SaleOptions) (Summary, error) {
	if err := st.CreateSKU(ctx, o.SKU, o.Units, o.Price, o.Buckets); err != nil {
		return Summary{}, err
	}
	started := st.API.Metrics().WorkflowsStarted

	bar := newProgress(o.Progress, o.Units)
	res, err := loadgen.Run(ctx, loadgen.Config{
		BaseURL: st.URL, SKU: o.SKU, Units: o.Units, Buyers: o.Buyers, Concurrency: o.Concurrency,
		WebhookSecret: st.Secret, Tokens: st.Buyers, PayShare: o.PayShare, CancelShare: o.CancelShare,
		DuplicateClickShare: o.DuplicateClickShare,
		// Buyers keep trying until released units have come back: one
		// payment timeout for the first winners, plus time for the buyers
		// of released units to pay.
		Deadline:     2*o.PaymentTimeout + 20*time.Second,
		PaymentDelay: 500 * time.Millisecond,
		Seed:         o.Seed,
		OnProgress:   func(p loadgen.Progress) { bar.set(p.Reserved, p.Paid) },
	})
	bar.finish()
	if err != nil {
		return Summary{}, err
	}
	if err := st.waitSettled(ctx, o.SKU, o.PaymentTimeout+30*time.Second); err != nil {
		return Summary{}, err
	}
	s, err := st.summarize(ctx, o, res, started)
	if err != nil {
		return Summary{}, err
	}
	return s, nil
}

// waitSettled waits until no unit of the SKU is frozen: every order is
// paid, cancelled or expired and its units are back.
func (st *Stack) waitSettled(ctx context.Context, sku string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		inv, err := st.Backend.Orders.Inventory(ctx, sku)
		if err != nil {
			return err
		}
		if inv.Frozen == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("sale did not settle: %d units still frozen after %s", inv.Frozen, timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// summarize reads what the sale left in MySQL, Redis and the API's
// metrics; started is the API's workflows-started count before the sale.
func (st *Stack) summarize(ctx context.Context, o SaleOptions, res loadgen.Result, started int64) (Summary, error) {
	m := st.API.Metrics()
	s := Summary{SKU: o.SKU, Stock: o.Units, Buyers: o.Buyers, Requests: res.Requests, Answers: res.Answers,
		P50: res.Percentile(0.50), P99: res.Percentile(0.99), P999: res.Percentile(0.999),
		TimeToReserveAll: res.TimeToReserveAll, Elapsed: res.Elapsed, Load: res,
		WorkflowsStarted: m.WorkflowsStarted - started, Edge: m.Edge}
	var rows []struct {
		Status flashsale.Status
		Orders int64
		Units  int64
	}
	err := st.Backend.Orders.DB().WithContext(ctx).Raw(`
		SELECT o.status AS status, COUNT(*) AS orders, SUM(i.quantity) AS units
		FROM orders o JOIN order_items i ON i.order_id = o.order_id
		WHERE i.sku_id = ? GROUP BY o.status`, o.SKU).Scan(&rows).Error
	if err != nil {
		return Summary{}, fmt.Errorf("count orders: %w", err)
	}
	for _, r := range rows {
		s.Reserved += r.Orders
		switch r.Status {
		case flashsale.StatusPaid:
			s.Paid = r.Units
		case flashsale.StatusCancelled:
			s.Cancelled = r.Units
		case flashsale.StatusExpired:
			s.Expired = r.Units
		case flashsale.StatusPendingPayment:
			s.Pending = r.Units
		}
	}
	s.BackOnSale = s.Cancelled + s.Expired
	inv, err := st.Backend.Orders.Inventory(ctx, o.SKU)
	if err != nil {
		return Summary{}, err
	}
	s.Sold, s.Available = inv.Sold, inv.Available
	rs, err := st.Backend.Stock.Stock(ctx, o.SKU)
	switch {
	case flashsale.ErrorCode(err) == flashsale.UnknownSKU:
		// A queued sale that ended: its keys are gone from Redis
		// (QueuedSale reads what Redis held from its report).
	case err != nil:
		return Summary{}, err
	default:
		s.RedisAvailable = rs.Available
	}
	// Oversold: units paid beyond the stock, counted two ways (the inventory
	// row and the paid orders); both must be zero.
	s.Oversold = max(0, inv.Sold-o.Units, s.Paid-o.Units)
	// Undersold only means something when demand exceeded supply.
	if int64(o.Buyers) > o.Units {
		s.Undersold = max(0, o.Units-inv.Sold)
	}
	s.SalePage = st.SalePageURL(o.SKU)
	if st.UIURL != "" {
		// %20, not +: the Web UI reads the query with decodeURIComponent.
		s.UIURL = st.UIURL + "/namespaces/default/workflows?query=" +
			strings.ReplaceAll(url.QueryEscape(fmt.Sprintf(`SkuIds = "%s"`, o.SKU)), "+", "%20")
	}
	return s, nil
}

// Table renders the summary for a person.
func (s Summary) Table() string {
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	row := func(k string, v any) { fmt.Fprintf(w, "%s\t%v\t\n", k, v) }
	row("stock", s.Stock)
	row("buyers", s.Buyers)
	row("buy requests", s.Requests)
	row("orders reserved", s.Reserved)
	row("paid (units)", s.Paid)
	row("cancelled (units)", s.Cancelled)
	row("expired (units)", s.Expired)
	row("units back on sale", s.BackOnSale)
	row("final sold", s.Sold)
	row("final available (MySQL / Redis)", fmt.Sprintf("%d / %d", s.Available, s.RedisAvailable))
	row("oversold (must be 0)", s.Oversold)
	row("undersold (must be 0)", s.Undersold)
	row("order workflows started", s.WorkflowsStarted)
	row("shed: sold out (local / redis flag / stock)", fmt.Sprintf("%d / %d / %d", s.Edge.SoldOutLocal, s.Edge.SoldOutRedis, s.Edge.SoldOutStock))
	row("shed: busy / rate limited", fmt.Sprintf("%d / %d", s.Edge.Busy, s.Edge.RateLimited))
	row("buy decision p50 / p99 / p999", fmt.Sprintf("%s / %s / %s", round(s.P50), round(s.P99), round(s.P999)))
	row("all units reserved after", round(s.TimeToReserveAll))
	row("sale took", round(s.Elapsed))
	_ = w.Flush()
	b.WriteString("\nanswers by code:\n")
	keys := make([]string, 0, len(s.Answers))
	for k := range s.Answers {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "  %-20s %d\n", k, s.Answers[k])
	}
	if s.SalePage != "" {
		fmt.Fprintf(&b, "\nLive sale page:\n  %s\n", s.SalePage)
	}
	if q := s.Queue; q != nil {
		b.WriteString("\nfair queue (the sale workflow's report):\n")
		w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		row := func(k string, v any) { fmt.Fprintf(w, "  %s\t%v\t\n", k, v) }
		r := q.Report
		if f := r.Fairness; f != nil {
			row("entrants ranked at the open / queued in all", fmt.Sprintf("%d / %d (%d came after the open)", f.Entrants, f.Queued, q.LateArrivals))
			row("passes issued / used / expired / unused", fmt.Sprintf("%d / %d / %d / %d", f.PassesIssued, f.PassesUsed, f.PassesExpired, f.PassesUnused))
		}
		row("ranks that bought with a pass", rankSpan(q.WinnerRanks))
		row("waitlist joined / offers", fmt.Sprintf("%d / %d", q.WaitlistJoined, q.WaitlistOffers))
		row("units sold / revenue", fmt.Sprintf("%d / %d", r.UnitsSold, r.Revenue))
		row("refunds (payments / amount)", fmt.Sprintf("%d / %d", r.Refunds, r.RefundAmount))
		row("ended after the close", round(q.Ended))
		row("redis keys left (must be 0)", q.RedisKeysLeft)
		row("seed (sha-256 = commitment)", q.Seed)
		_ = w.Flush()
	}
	if s.Campaign != nil {
		campaignTable(&b, s.Campaign)
	}
	if s.UIURL != "" {
		what := "this sale's orders"
		if s.Queue != nil {
			what = "this sale's orders beside its sale workflow (" + s.Queue.SaleWorkflow + ")"
		}
		fmt.Fprintf(&b, "\nTemporal Web UI, %s:\n  %s\n", what, s.UIURL)
	}
	return b.String()
}

// rankSpan summarizes ascending ranks: how many, the best and the worst.
func rankSpan(r []int64) string {
	if len(r) == 0 {
		return "none"
	}
	return fmt.Sprintf("%d buyers, ranks %d..%d", len(r), r[0], r[len(r)-1])
}

// SalePageURL is the API's live page of sku, for a person to open while
// the sale runs.
func (st *Stack) SalePageURL(sku string) string { return st.URL + "/sale/" + url.PathEscape(sku) }

func round(d time.Duration) time.Duration {
	switch {
	case d > 10*time.Second:
		return d.Round(100 * time.Millisecond)
	case d > time.Millisecond:
		return d.Round(100 * time.Microsecond)
	}
	return d
}
