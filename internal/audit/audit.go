// Package audit checks the invariants of a flash sale across MySQL, Redis
// and Temporal, and reports every breach as a structured violation. It is
// what the fault-injection suite runs after each fault, and what an
// operator runs (starter check) after a sale or an incident.
//
// The checker reads; it never repairs. Repairing Redis is the reconcile
// workflow's job, and it uses the same measurement of Redis against MySQL
// (activities.Reconciler) so the two can never disagree about what "in step"
// means.
package audit

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/flashsale/flashsale/activities"
	"github.com/flashsale/flashsale/internal/inventory"
	"github.com/flashsale/flashsale/internal/orderdb"
	"github.com/flashsale/flashsale/workflows"
)

// DefaultGrace is how long an order may stay open past its pay-by time
// before it counts as stuck. The workflow closes it on its timer, then runs
// two short activities; a minute covers that and a worker restart.
const DefaultGrace = time.Minute

// reserveBudget bounds the reserve step (two local activities of at most 30
// s each): a running order workflow with no database row older than this
// plus the grace is stuck before it ever had a deadline.
const reserveBudget = time.Minute

// Deps are the services the checker reads.
type Deps struct {
	Stock    *inventory.Store
	Orders   *orderdb.Store
	Temporal client.Client
	// Grace is how long past pay_by an order may stay open; zero means
	// DefaultGrace.
	Grace time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Kind names the invariant a violation breaks. Expected and Actual hold
// numbers (units, counts) or strings (statuses, times), as each kind says.
type Kind string

// Violation kinds.
const (
	// KindNegative: total, available, frozen or sold below zero.
	// Expected 0, Actual the value.
	KindNegative Kind = "negative"
	// KindBalance: available + frozen + sold != total. Expected total,
	// Actual the sum.
	KindBalance Kind = "balance"
	// KindFrozen: frozen != units of PENDING_PAYMENT orders. Expected the
	// order units, Actual frozen.
	KindFrozen Kind = "frozen_vs_pending_orders"
	// KindSold: sold != units of PAID orders of the current sale.
	// Expected the order units, Actual sold.
	KindSold Kind = "sold_vs_paid_orders"
	// KindJournalReplay: the journal does not replay to the row. Expected
	// what the journal says, Actual the row's value; Detail the column.
	KindJournalReplay Kind = "journal_replay"
	// KindJournalChain: journal entries that do not follow from the entry
	// before. Expected 0, Actual the count.
	KindJournalChain Kind = "journal_chain"
	// KindOrderJournal: an order's journal entries disagree with its
	// status. Expected and Actual are the entry types.
	KindOrderJournal Kind = "order_journal"
	// KindCapturedNotPaid: CAPTURED money on an order that is not PAID.
	// Expected "PAID", Actual the order status ("" when no order exists).
	KindCapturedNotPaid Kind = "captured_payment_on_unpaid_order"
	// KindPaymentStatus: a payment neither CAPTURED nor REFUND_REQUIRED.
	KindPaymentStatus Kind = "payment_status"
	// KindCapturedAmount: a CAPTURED payment for another amount than the
	// order's. Expected the order amount, Actual the payment's.
	KindCapturedAmount Kind = "captured_amount"
	// KindPaidCaptures: a PAID order without exactly one CAPTURED payment.
	// Expected 1, Actual the count.
	KindPaidCaptures Kind = "paid_order_captures"
	// KindReceivedNotKept: money received by the order's deadline, the
	// order closed unpaid, and no payment row answers it.
	KindReceivedNotKept Kind = "payment_received_in_time_not_kept"
	// KindRedisMissing: Redis has no buckets for a SKU MySQL sells; buyers
	// get UNKNOWN_SKU. Expected db available, Actual 0.
	KindRedisMissing Kind = "redis_missing"
	// KindRedisNegative: a bucket holds a negative count. Expected 0,
	// Actual the number of such buckets.
	KindRedisNegative Kind = "redis_negative_bucket"
	// KindRedisOver: Redis buckets plus in-flight units exceed db
	// available: Redis admits buyers MySQL must refuse. Expected db
	// available, Actual buckets + in flight.
	KindRedisOver Kind = "redis_over_db"
	// KindRedisUnder: Redis buckets plus in-flight units fall short of db
	// available: buyers are told sold out while stock exists.
	KindRedisUnder Kind = "redis_under_db"
	// KindOrderOverdue: a PENDING_PAYMENT order past pay_by + grace.
	// Expected the close-by time, Actual the status.
	KindOrderOverdue Kind = "order_overdue"
	// KindWorkflowOverdue: an order workflow still running past pay_by +
	// grace (or past the reserve budget with no order row). Expected the
	// close-by time, Actual "Running".
	KindWorkflowOverdue Kind = "workflow_overdue"
)

// Violation is one breach of an invariant.
type Violation struct {
	SKU           string `json:"sku_id"`
	OrderID       string `json:"order_id,omitempty"`
	TransactionID string `json:"transaction_id,omitempty"`
	Kind          Kind   `json:"kind"`
	Expected      any    `json:"expected"`
	Actual        any    `json:"actual"`
	Detail        string `json:"detail"`
}

// SKUState is what the checker saw of one SKU.
type SKUState struct {
	SKU          string `json:"sku_id"`
	Total        int64  `json:"total"`
	Available    int64  `json:"available"`
	Frozen       int64  `json:"frozen"`
	Sold         int64  `json:"sold"`
	PendingUnits int64  `json:"pending_units"`
	PaidUnits    int64  `json:"paid_units"`
	// Redis is the reconciler's observation of the SKU.
	Redis         activities.StockObservation `json:"redis"`
	OpenWorkflows int                         `json:"open_workflows"`
}

// Oversold counts units sold beyond the stock or without a paid order to
// show for them.
func (s SKUState) Oversold() int64 {
	return max(0, s.Sold-s.Total) + absDiff(s.PaidUnits, s.Sold)
}

// Undersold counts units a settled sale lost, for a sale whose buyers
// outnumbered its units and kept trying to the end (the fault and scale-out
// suites): units neither sold, on sale nor frozen, Redis short of MySQL, and
// any unit left unsold.
func (s SKUState) Undersold() int64 {
	return absDiff(s.Total, s.Sold+s.Available+s.Frozen) + max(0, s.Redis.Drift) + (s.Total - s.Sold)
}

func absDiff(a, b int64) int64 {
	if a > b {
		return a - b
	}
	return b - a
}

// Report is the outcome of Check.
type Report struct {
	CheckedAt  time.Time   `json:"checked_at"`
	OK         bool        `json:"ok"`
	SKUs       []SKUState  `json:"skus"`
	Violations []Violation `json:"violations"`
	// Warnings are things the checker could not judge, such as a Redis
	// snapshot torn by a live sale.
	Warnings []string `json:"warnings,omitempty"`
}

// Check checks every SKU MySQL knows, or only skuFilter when it is set
// (an unknown skuFilter is an error wrapping orderdb.ErrUnknownSKU). An
// error means a service could not be read; a breach is a Violation, and
// Report.OK is false when there is any.
func Check(ctx context.Context, deps Deps, skuFilter string) (Report, error) {
	if deps.Stock == nil || deps.Orders == nil || deps.Temporal == nil {
		return Report{}, errors.New("audit: Stock, Orders and Temporal are required")
	}
	c := &checker{deps: deps, now: time.Now, grace: cmp.Or(deps.Grace, DefaultGrace), seen: map[string]bool{}}
	if deps.Now != nil {
		c.now = deps.Now
	}
	c.report.CheckedAt = c.now().UTC()
	c.report.SKUs = []SKUState{} // [] rather than null for scripts
	c.recon = &activities.Reconciler{
		Stock: deps.Stock, Orders: deps.Orders, Temporal: deps.Temporal,
		OrderWorkflowID: workflows.OrderWorkflowID,
	}

	skus := []string{skuFilter}
	if skuFilter == "" {
		var err error
		if skus, err = deps.Orders.SKUIDs(ctx); err != nil {
			return Report{}, fmt.Errorf("audit: %w", err)
		}
	}
	for _, sku := range skus {
		if err := c.checkSKU(ctx, sku); err != nil {
			return Report{}, fmt.Errorf("audit %s: %w", sku, err)
		}
	}
	if err := c.checkPayments(ctx, skuFilter); err != nil {
		return Report{}, fmt.Errorf("audit: %w", err)
	}

	r := c.report
	slices.SortStableFunc(r.Violations, func(a, b Violation) int {
		return cmp.Or(cmp.Compare(a.SKU, b.SKU), cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.OrderID, b.OrderID))
	})
	if r.Violations == nil {
		r.Violations = []Violation{} // [] rather than null for scripts
	}
	r.OK = len(r.Violations) == 0
	return r, nil
}

type checker struct {
	deps   Deps
	now    func() time.Time
	grace  time.Duration
	recon  *activities.Reconciler
	report Report
	// seen dedupes order-level violations found once per SKU of the order.
	seen map[string]bool
}

func (c *checker) add(v Violation) {
	if v.OrderID != "" {
		key := string(v.Kind) + "\x00" + v.OrderID + "\x00" + v.TransactionID
		if c.seen[key] {
			return
		}
		c.seen[key] = true
	}
	c.report.Violations = append(c.report.Violations, v)
}

func (c *checker) checkSKU(ctx context.Context, sku string) error {
	a, err := c.deps.Orders.AuditSKU(ctx, sku)
	if err != nil {
		return err
	}
	inv := a.Inventory
	state := SKUState{
		SKU: sku, Total: inv.Total, Available: inv.Available, Frozen: inv.Frozen, Sold: inv.Sold,
		PendingUnits: a.PendingUnits, PaidUnits: a.PaidUnits,
	}
	c.checkStock(a)
	if inv.RedisResync > 0 {
		// Orders were reserved or closed in MySQL alone; until the
		// resync workflow clears the flag, Redis may differ from MySQL
		// and is not used for this SKU.
		c.report.Warnings = append(c.report.Warnings,
			fmt.Sprintf("%s: redis resync pending (%d degraded moves); reservations are MySQL-only until resync-%s clears it", sku, inv.RedisResync, sku))
	}

	obs, err := c.recon.ObserveStock(ctx, activities.ObserveStockInput{SKUs: []string{sku}})
	if err != nil {
		return err
	}
	state.Redis = obs.Observations[0]
	c.checkRedis(state.Redis)

	if state.OpenWorkflows, err = c.checkDeadlines(ctx, sku); err != nil {
		return err
	}
	c.report.SKUs = append(c.report.SKUs, state)
	return nil
}

// checkStock applies the database invariants of one SKU.
func (c *checker) checkStock(a orderdb.SKUAudit) {
	inv, sku := a.Inventory, a.Inventory.SKU
	for _, col := range []struct {
		name  string
		value int64
	}{{"total", inv.Total}, {"available", inv.Available}, {"frozen", inv.Frozen}, {"sold", inv.Sold}} {
		if col.value < 0 {
			c.add(Violation{SKU: sku, Kind: KindNegative, Expected: 0, Actual: col.value, Detail: col.name + " is negative"})
		}
	}
	if sum := inv.Available + inv.Frozen + inv.Sold; sum != inv.Total {
		c.add(Violation{SKU: sku, Kind: KindBalance, Expected: inv.Total, Actual: sum,
			Detail: fmt.Sprintf("available %d + frozen %d + sold %d != total %d", inv.Available, inv.Frozen, inv.Sold, inv.Total)})
	}
	if a.PendingUnits != inv.Frozen {
		c.add(Violation{SKU: sku, Kind: KindFrozen, Expected: a.PendingUnits, Actual: inv.Frozen,
			Detail: "frozen must equal the units of PENDING_PAYMENT orders"})
	}
	if a.PaidUnits != inv.Sold {
		c.add(Violation{SKU: sku, Kind: KindSold, Expected: a.PaidUnits, Actual: inv.Sold,
			Detail: "sold must equal the units of PAID orders since the last reset"})
	}

	j := a.Journal
	for _, col := range []struct {
		name           string
		sum, last, row int64
	}{
		{"available", j.Available, j.LastAvailable, inv.Available},
		{"frozen", j.Frozen, j.LastFrozen, inv.Frozen},
		{"sold", j.Sold, j.LastSold, inv.Sold},
	} {
		if col.sum != col.row {
			c.add(Violation{SKU: sku, Kind: KindJournalReplay, Expected: col.sum, Actual: col.row,
				Detail: fmt.Sprintf("%s: %d journal deltas sum to %d, row has %d", col.name, j.Entries, col.sum, col.row)})
		}
		if j.Entries > 0 && col.last != col.row {
			c.add(Violation{SKU: sku, Kind: KindJournalReplay, Expected: col.last, Actual: col.row,
				Detail: fmt.Sprintf("%s: newest journal entry ends at %d, row has %d", col.name, col.last, col.row)})
		}
	}
	if j.Breaks > 0 {
		c.add(Violation{SKU: sku, Kind: KindJournalChain, Expected: 0, Actual: j.Breaks,
			Detail: fmt.Sprintf("journal entries not following from the one before; first is id %d", j.FirstBreak)})
	}
	for _, o := range a.OrderJournals {
		c.add(Violation{SKU: sku, OrderID: o.OrderID, Kind: KindOrderJournal, Expected: o.Want, Actual: o.Types,
			Detail: fmt.Sprintf("%s order has journal entries [%s], want [%s]", o.Status, o.Types, o.Want)})
	}
}

// checkRedis compares Redis with MySQL the way the reconciler does.
func (c *checker) checkRedis(obs activities.StockObservation) {
	sku := obs.SKU
	switch {
	case obs.UnknownSKU:
		return // the row vanished since AuditSKU; the next check sees it
	case obs.Missing:
		c.add(Violation{SKU: sku, Kind: KindRedisMissing, Expected: obs.DBAvailable, Actual: 0,
			Detail: "redis has no bucket count: buyers are answered UNKNOWN_SKU until it is restored"})
		return
	}
	if n := len(obs.NegativeBuckets); n > 0 {
		c.add(Violation{SKU: sku, Kind: KindRedisNegative, Expected: 0, Actual: n,
			Detail: fmt.Sprintf("buckets %v hold negative counts", obs.NegativeBuckets)})
	}
	if obs.Torn {
		// Units kept coming back while it was read: the drift may be off
		// by them either way, so it is not judged.
		c.report.Warnings = append(c.report.Warnings,
			fmt.Sprintf("%s: redis snapshot torn by a live sale (drift %d not judged)", sku, obs.Drift))
		return
	}
	if obs.Dead > 0 {
		// Not wrong now (those units are out of Redis on purpose), but
		// proof that Redis once offered units MySQL did not have: after
		// no Redis fault, that is a bug worth a look.
		c.report.Warnings = append(c.report.Warnings,
			fmt.Sprintf("%s: %d units held in redis by ended orders mysql refused (past drift)", sku, obs.Dead))
	}
	got := obs.RedisUnits + obs.InFlight
	detail := fmt.Sprintf("redis buckets %d + in flight %d (%d orders) vs db available %d",
		obs.RedisUnits, obs.InFlight, obs.InFlightOrders, obs.DBAvailable)
	switch {
	case obs.Drift < 0:
		c.add(Violation{SKU: sku, Kind: KindRedisOver, Expected: obs.DBAvailable, Actual: got,
			Detail: detail + fmt.Sprintf(": redis offers %d units mysql does not have", -obs.Drift)})
	case obs.Drift > 0:
		c.add(Violation{SKU: sku, Kind: KindRedisUnder, Expected: obs.DBAvailable, Actual: got,
			Detail: detail + fmt.Sprintf(": %d units on sale in mysql are missing from redis", obs.Drift)})
	}
}

// checkDeadlines finds orders still open well past their deadline, in
// MySQL (still PENDING_PAYMENT) and in Temporal (workflow still running).
// It returns how many order workflows of the SKU are running.
func (c *checker) checkDeadlines(ctx context.Context, sku string) (int, error) {
	now := c.now()
	overdue, err := c.deps.Orders.OverdueOrders(ctx, sku, now.Add(-c.grace))
	if err != nil {
		return 0, err
	}
	for _, o := range overdue {
		c.add(Violation{SKU: sku, OrderID: o.OrderID, Kind: KindOrderOverdue,
			Expected: "closed by " + o.PayBy.Add(c.grace).Format(time.RFC3339), Actual: string(o.Status),
			Detail: fmt.Sprintf("pay_by %s passed %s ago; the order still holds its units frozen",
				o.PayBy.Format(time.RFC3339), now.Sub(o.PayBy).Round(time.Second))})
	}

	open, err := c.openOrderWorkflows(ctx, sku)
	if err != nil {
		return 0, err
	}
	ids := make([]string, 0, len(open))
	for id := range open {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	deadlines, err := c.deps.Orders.Deadlines(ctx, ids)
	if err != nil {
		return 0, err
	}
	for _, id := range ids {
		closeBy := open[id].Add(reserveBudget + c.grace)
		what := "no order row: still reserving"
		if d, ok := deadlines[id]; ok {
			closeBy = d.PayBy.Add(c.grace)
			what = fmt.Sprintf("order %s, pay_by %s", d.Status, d.PayBy.Format(time.RFC3339))
		}
		if now.Before(closeBy) {
			continue
		}
		c.add(Violation{SKU: sku, OrderID: id, Kind: KindWorkflowOverdue,
			Expected: "closed by " + closeBy.Format(time.RFC3339), Actual: "Running",
			Detail: fmt.Sprintf("workflow %s still running (%s)", workflows.OrderWorkflowID(id), what)})
	}
	return len(open), nil
}

// openOrderWorkflows lists the running order workflows holding sku, by
// order id, with their start times. Visibility lags by a moment, which only
// matters for workflows far younger than any deadline.
func (c *checker) openOrderWorkflows(ctx context.Context, sku string) (map[string]time.Time, error) {
	prefix := workflows.OrderWorkflowID("")
	query := workflows.RunningOrdersQuery(sku)
	open := make(map[string]time.Time)
	var token []byte
	for {
		resp, err := c.deps.Temporal.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Query: query, NextPageToken: token,
		})
		if err != nil {
			return nil, fmt.Errorf("list open order workflows: %w", err)
		}
		for _, e := range resp.GetExecutions() {
			id, ok := strings.CutPrefix(e.GetExecution().GetWorkflowId(), prefix)
			if !ok {
				continue
			}
			open[id] = e.GetStartTime().AsTime()
		}
		if token = resp.GetNextPageToken(); len(token) == 0 {
			return open, nil
		}
	}
}

// checkPayments applies the payment rules, to the orders holding skuFilter
// or to everything.
func (c *checker) checkPayments(ctx context.Context, skuFilter string) error {
	p, err := c.deps.Orders.PaymentAudit(ctx, skuFilter)
	if err != nil {
		return err
	}
	sku := func(a orderdb.PaymentAnomaly) string { return cmp.Or(skuFilter, a.SKU) }
	for _, a := range p.CapturedNotPaid {
		c.add(Violation{SKU: sku(a), OrderID: a.OrderID, TransactionID: a.TransactionID, Kind: KindCapturedNotPaid,
			Expected: string(orderdb.StatusPaid), Actual: a.OrderStatus,
			Detail: "captured money on an order that is not PAID: it must be refunded (REFUND_REQUIRED) or the order paid"})
	}
	for _, a := range p.BadStatus {
		c.add(Violation{SKU: sku(a), OrderID: a.OrderID, TransactionID: a.TransactionID, Kind: KindPaymentStatus,
			Expected: string(orderdb.PaymentCaptured) + "|" + string(orderdb.PaymentRefundRequired), Actual: a.PaymentStatus,
			Detail: "payment status is neither captured nor marked for refund"})
	}
	for _, a := range p.AmountMismatch {
		c.add(Violation{SKU: sku(a), OrderID: a.OrderID, TransactionID: a.TransactionID, Kind: KindCapturedAmount,
			Expected: a.OrderAmount, Actual: a.Amount, Detail: "captured amount differs from the order amount"})
	}
	for _, a := range p.ReceivedNotKept {
		c.add(Violation{SKU: sku(a), OrderID: a.OrderID, TransactionID: a.TransactionID, Kind: KindReceivedNotKept,
			Expected: string(orderdb.StatusPaid), Actual: a.OrderStatus,
			Detail: "money received by the deadline, yet the order closed unpaid and nothing records the payment: it must be kept (PAID) or refunded"})
	}
	for _, a := range p.PaidCaptures {
		c.add(Violation{SKU: sku(a), OrderID: a.OrderID, Kind: KindPaidCaptures, Expected: 1, Actual: a.Captures,
			Detail: "a PAID order needs exactly one CAPTURED payment"})
	}
	return nil
}
