package activities

import (
	"context"
	"fmt"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/internal/sale"
)

// A fair sale's decisions, written to Redis for the requests that read
// them (docs/design/fair-sale.md). Each is idempotent: Prepare for one sale
// id, Open on frozen entrants and a fixed seed, a state move to the state
// it is already in.

// PrepareSaleInput creates a sale.
type PrepareSaleInput struct {
	SKU     string        `json:"sku_id"`
	SaleID  string        `json:"sale_id"`
	OpensAt time.Time     `json:"opens_at"`
	PassTTL time.Duration `json:"pass_ttl"`
}

// PreparedSale is the sale's published commitment.
type PreparedSale struct {
	SeedHash string `json:"seed_hash"`
}

// PrepareSale creates the sale in PREQUEUE and returns the hash of its
// seed (sale.Store.Prepare); the seed stays in Redis until the open.
func (a *Activities) PrepareSale(ctx context.Context, in PrepareSaleInput) (PreparedSale, error) {
	h, err := a.Sales.Prepare(ctx, in.SKU, in.SaleID, in.OpensAt, in.PassTTL)
	if err != nil {
		return PreparedSale{}, a.saleAnswer("prepare sale", err)
	}
	return PreparedSale{SeedHash: h}, nil
}

// SaleRequest names a sale.
type SaleRequest struct {
	SKU string `json:"sku_id"`
}

// OpenSale freezes the entrants, ranks them by the seed, opens the sale
// and reveals the seed (sale.Store.Open).
func (a *Activities) OpenSale(ctx context.Context, in SaleRequest) (sale.Opened, error) {
	o, err := a.Sales.Open(ctx, in.SKU)
	if err != nil {
		return sale.Opened{}, a.saleAnswer("open sale", err)
	}
	return o, nil
}

// SaleStateChange moves a sale from one of From to To.
type SaleStateChange struct {
	SKU  string       `json:"sku_id"`
	To   sale.State   `json:"to"`
	From []sale.State `json:"from"`
}

// SetSaleState writes a sale's new state, which every API instance reads
// on its next request of the SKU. A close also closes the SKU's waitlist:
// nothing is sold after it, so a unit an unpaid order gives back goes back
// to the buckets instead of becoming a waiting buyer's order.
func (a *Activities) SetSaleState(ctx context.Context, in SaleStateChange) (sale.State, error) {
	st, err := a.Sales.SetState(ctx, in.SKU, in.To, in.From...)
	if err != nil {
		return st, a.saleAnswer("set sale state", err)
	}
	if in.To == sale.Closed {
		if err := a.Stock.CloseWaitlist(ctx, in.SKU); err != nil {
			return st, fmt.Errorf("close the waitlist of %s: %w", in.SKU, err)
		}
	}
	return st, nil
}

// VoidedOrders is what CancelSaleOrders did.
type VoidedOrders struct {
	// Cancelled is how many running orders of the SKU were sent a cancel.
	Cancelled int `json:"cancelled"`
}

// voidSettle is how long CancelSaleOrders looks again for orders the
// previous pass could not see yet (visibility lags by about a second).
const voidSettle = 2 * time.Second

// CancelSaleOrders cancels every running order of the sale's SKU (their
// compensation gives the units back), then looks again after voidSettle,
// until a pass finds none it has not cancelled yet (an order still
// compensating is still running). The sale is closed first (SaleWorkflow),
// so no new order can start meanwhile but one already admitted.
// Idempotent: a finished order is skipped, a retry signals again.
func (a *Activities) CancelSaleOrders(ctx context.Context, in SaleRequest) (VoidedOrders, error) {
	var out VoidedOrders
	signalled := map[string]bool{}
	for {
		n, err := a.CancelRunningOrders(ctx, in.SKU, "sale voided", signalled)
		out.Cancelled += n
		if err != nil {
			return out, err
		}
		activity.RecordHeartbeat(ctx, out.Cancelled)
		if n == 0 {
			return out, nil
		}
		if err := sleep(ctx, voidSettle); err != nil {
			return out, err
		}
	}
}

func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// RefundSaleInput names a voided sale's orders: those holding SKU created
// since the sale started.
type RefundSaleInput struct {
	SKU    string    `json:"sku_id"`
	Since  time.Time `json:"since"`
	Reason string    `json:"reason"`
}

// RefundedOrders is what RefundSaleOrders did.
type RefundedOrders struct {
	// Refunded is how many paid orders this call refunded.
	Refunded int `json:"refunded"`
}

// refundPage is how many orders RefundSaleOrders reads at a time.
const refundPage = 200

// RefundSaleOrders refunds every PAID order of a voided sale
// (orderdb.Store.RefundOrder: the order CANCELLED, its captured money
// recorded REFUND_REQUIRED, its units from sold back to available), then
// gives every refunded order's units back to Redis (inventory.Store.Release,
// once per order whatever the retries). The second pass reads the refunded
// orders from MySQL, not from the first, so a retry after a crash between
// the two moves finishes the Redis side of every order refunded before.
// Call it once no order of the sale runs: an order paid after it stays
// paid (SaleWorkflow calls it again once the sale has settled).
func (a *Activities) RefundSaleOrders(ctx context.Context, in RefundSaleInput) (RefundedOrders, error) {
	var out RefundedOrders
	for after := ""; ; {
		ids, err := a.Orders.PaidOrders(ctx, in.SKU, in.Since, after, refundPage)
		if err != nil {
			return out, err
		}
		for _, id := range ids {
			_, refunded, err := a.Orders.RefundOrder(ctx, id, in.Reason)
			if err != nil {
				return out, a.saleAnswer("refund order "+id, err)
			}
			if refunded {
				out.Refunded++
			}
		}
		activity.RecordHeartbeat(ctx, out.Refunded)
		if len(ids) < refundPage {
			break
		}
		after = ids[len(ids)-1]
	}
	for after := ""; ; {
		ids, err := a.Orders.RefundedOrders(ctx, in.SKU, in.Since, after, refundPage)
		if err != nil {
			return out, err
		}
		for _, id := range ids {
			o, err := a.Orders.Order(ctx, id)
			if err != nil {
				return out, err
			}
			for _, it := range o.Items {
				if _, err := a.Stock.Release(ctx, id, it.SKU); err != nil {
					return out, fmt.Errorf("give back the units of refunded order %s: %w", id, err)
				}
			}
		}
		activity.RecordHeartbeat(ctx, out.Refunded)
		if len(ids) < refundPage {
			return out, nil
		}
		after = ids[len(ids)-1]
	}
}

// SaleSettled is what AwaitSaleSettled saw last.
type SaleSettled struct {
	// Looks is how many times it looked.
	Looks int `json:"looks"`
}

// settlePoll is how often AwaitSaleSettled looks; two calm looks this far
// apart cover visibility's lag (about a second).
const settlePoll = 2 * time.Second

// AwaitSaleSettled returns once the closed sale's SKU has settled: no
// order workflow of it runs (none unpaid, none compensating) and MySQL
// holds none of its units frozen, seen twice settlePoll apart. It
// heartbeats while it waits, for as long as unpaid orders have to pay.
func (a *Activities) AwaitSaleSettled(ctx context.Context, in SaleRequest) (SaleSettled, error) {
	var out SaleSettled
	calm := 0
	for {
		out.Looks++
		running, err := a.CountRunningOrders(ctx, in.SKU)
		if err != nil {
			return out, err
		}
		inv, err := a.Orders.Inventory(ctx, in.SKU)
		if err != nil {
			return out, a.saleAnswer("settle sale", err)
		}
		activity.RecordHeartbeat(ctx, map[string]int64{"running_orders": running, "frozen": inv.Frozen})
		if running == 0 && inv.Frozen == 0 {
			calm++
		} else {
			calm = 0
		}
		if calm == 2 {
			return out, nil
		}
		if err := sleep(ctx, settlePoll); err != nil {
			return out, err
		}
	}
}

// CheckSaleStock compares the settled sale's Redis buckets with MySQL as
// the reconciler does (Reconciler.ObserveStock), and answers the
// observation once they agree: no drift, nothing in flight. While they do
// not (a lost release, a degraded order's resync pending) it fails, and
// is retried until they do: an operator repairs a drift with `starter
// reconcile now`; the sale's keys are never removed over a disagreement.
func (a *Activities) CheckSaleStock(ctx context.Context, in SaleRequest) (StockObservation, error) {
	r := &Reconciler{Stock: a.Stock, Orders: a.Orders, Logger: a.Logger, OrderWorkflowID: a.OrderWorkflowID}
	res, err := r.ObserveStock(ctx, ObserveStockInput{SKUs: []string{in.SKU}})
	if err != nil {
		return StockObservation{}, err
	}
	obs := res.Observations[0]
	switch {
	case obs.UnknownSKU:
		return obs, refuse("check sale stock", flashsale.Errorf(flashsale.UnknownSKU, "sku %s is gone from mysql", in.SKU))
	case obs.Ended:
		return obs, nil
	case obs.Missing, obs.Torn, obs.Drift != 0, obs.InFlight != 0, len(obs.NegativeBuckets) > 0:
		return obs, fmt.Errorf("mysql and redis disagree on %s (db available %d, redis %d, in flight %d, drift %d, missing %t, torn %t): "+
			"retried until they agree; `starter reconcile now --sku %s` repairs a drift",
			in.SKU, obs.DBAvailable, obs.RedisUnits, obs.InFlight, obs.Drift, obs.Missing, obs.Torn, in.SKU)
	}
	return obs, nil
}

// SaleReportInput names a sale for its report: its SKU's orders created
// since the sale started.
type SaleReportInput struct {
	SKU   string    `json:"sku_id"`
	Since time.Time `json:"since"`
}

// SaleReport is a sale's final report, SaleWorkflow's result: what was
// sold, for how much, what is owed back, and how fair it was.
type SaleReport struct {
	// UnitsSold are the units of the sale's PAID orders; Orders counts
	// the sale's orders by status.
	UnitsSold int64                      `json:"units_sold"`
	Orders    map[flashsale.Status]int64 `json:"orders"`
	// Revenue is the money captured for paid orders (minor units).
	Revenue int64 `json:"revenue"`
	// Refunds and RefundAmount are the payments recorded for refund (late
	// money, second payments, and a void's refunds); RefundedOrders the
	// paid orders a void refunded.
	Refunds        int64 `json:"refunds"`
	RefundAmount   int64 `json:"refund_amount"`
	RefundedOrders int64 `json:"refunded_orders"`
	// Available is the SKU's units left, in MySQL and Redis alike (the
	// check before the report).
	Available int64 `json:"available"`
	// Fairness is the queue's figures; nil when the sale's queue was gone
	// already.
	Fairness *SaleFairness `json:"fairness,omitempty"`
}

// SaleFairness is the queue's account of a sale.
type SaleFairness struct {
	// Entrants were ranked by the shuffle; Queued is everyone ranked
	// (entrants and later arrivals, FIFO).
	Entrants int64 `json:"entrants"`
	Queued   int64 `json:"queued"`
	// PassesIssued is the serving counter (one pass per rank served);
	// PassesUsed bought their unit; PassesExpired ran out unused (their
	// units went to the next rank); PassesUnused were still outstanding
	// at the close.
	PassesIssued  int64 `json:"passes_issued"`
	PassesUsed    int64 `json:"passes_used"`
	PassesExpired int64 `json:"passes_expired"`
	PassesUnused  int64 `json:"passes_unused"`
}

// ReportSale reads the sale's report: its ledger from MySQL and its
// queue's figures from Redis. It only reads, so it is run before the
// sale's keys are removed and its result is kept in the history.
func (a *Activities) ReportSale(ctx context.Context, in SaleReportInput) (SaleReport, error) {
	l, err := a.Orders.SaleLedger(ctx, in.SKU, in.Since)
	if err != nil {
		return SaleReport{}, err
	}
	inv, err := a.Orders.Inventory(ctx, in.SKU)
	if err != nil {
		return SaleReport{}, a.saleAnswer("report sale", err)
	}
	out := SaleReport{UnitsSold: l.Units[flashsale.StatusPaid], Orders: l.Orders, Revenue: l.Revenue,
		Refunds: l.Refunds, RefundAmount: l.RefundAmount, RefundedOrders: l.Refunded, Available: inv.Available}
	b, err := a.Sales.BoardOf(ctx, in.SKU)
	switch {
	case flashsale.ErrorCode(err) == flashsale.NoSale:
		return out, nil
	case err != nil:
		return SaleReport{}, err
	}
	out.Fairness = &SaleFairness{Entrants: b.Entrants, Queued: b.Queued, PassesIssued: b.Serving, PassesUsed: b.Spent,
		PassesUnused: b.Outstanding, PassesExpired: max(0, b.Serving-b.Spent-b.Outstanding)}
	return out, nil
}

// EndedSale is when a sale ended (EndSale).
type EndedSale struct {
	EndedAt time.Time `json:"ended_at"`
}

// EndSale marks the SKU's sale ended in MySQL (orderdb.Store.EndSale):
// from then on reconciliation and the checker leave its Redis keys to
// RemoveSaleKeys. A retry answers the first call's time.
func (a *Activities) EndSale(ctx context.Context, in SaleRequest) (EndedSale, error) {
	at, err := a.Orders.EndSale(ctx, in.SKU)
	if err != nil {
		return EndedSale{}, a.saleAnswer("end sale", err)
	}
	return EndedSale{EndedAt: at}, nil
}

// RemoveSaleKeysInput is the sale whose keys go: its SKU and the end
// EndSale recorded.
type RemoveSaleKeysInput struct {
	SKU     string    `json:"sku_id"`
	EndedAt time.Time `json:"ended_at"`
}

// RemovedSaleKeys is what RemoveSaleKeys did.
type RemovedSaleKeys struct {
	// Removed counts the keys this attempt removed (an attempt cut short
	// by a crash removed the others).
	Removed int64 `json:"removed"`
	// Reopened: the SKU went on sale again before every key was removed;
	// the new sale's keys were left alone.
	Reopened bool `json:"reopened,omitempty"`
}

// RemoveSaleKeys removes every Redis key of the ended sale's SKU
// (inventory.Store.RemoveSKU): buckets and the units' markers, the
// per-buyer counts, the waitlist, sold-out flags, the queue, its ranks,
// passes and seed. Before each batch it checks that MySQL still marks the
// sale ended at in.EndedAt: a retry after the SKU went on sale again (a
// preheat clears the mark) removes nothing of the new sale. Removing is
// idempotent, so a retry after a crash removes what is left and nothing
// twice.
func (a *Activities) RemoveSaleKeys(ctx context.Context, in RemoveSaleKeysInput) (RemovedSaleKeys, error) {
	var out RemovedSaleKeys
	still := func(ctx context.Context) (bool, error) {
		activity.RecordHeartbeat(ctx, nil)
		at, err := a.Orders.SaleEndedAt(ctx, in.SKU)
		if err != nil {
			return false, err
		}
		out.Reopened = !at.Equal(in.EndedAt)
		return !out.Reopened, nil
	}
	n, err := a.Stock.RemoveSKU(ctx, in.SKU, still)
	out.Removed = n
	if err != nil {
		return out, a.saleAnswer("remove sale keys", err)
	}
	return out, nil
}

// saleAnswer makes a business answer non-retryable; an outage is retried.
func (a *Activities) saleAnswer(op string, err error) error {
	switch flashsale.ErrorCode(err) {
	case flashsale.SaleStateConflict, flashsale.NoSale, flashsale.Invalid, flashsale.UnknownSKU:
		return refuse(op, err)
	}
	return err
}
