package activities

import (
	"context"
	"fmt"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/activities/contract"
	"github.com/flashsale/flashsale/internal/sale"
)

// A fair sale's decisions, written to Redis for the requests that read
// them (docs/design/fair-sale.md). Each is idempotent: Prepare for one sale
// id, Open on frozen entrants and a fixed seed, a state move to the state
// it is already in.

// PrepareSale creates the sale in PREQUEUE and returns the hash of its
// seed (sale.Store.Prepare); the seed stays in MySQL, out of Redis, until
// the open.
func (a *Activities) PrepareSale(ctx context.Context, in contract.PrepareSaleInput) (contract.PreparedSale, error) {
	h, err := a.Sales.Prepare(ctx, in.SKU, in.SaleID, in.OpensAt, in.PassTTL, in.MaxEntrants)
	if err != nil {
		return contract.PreparedSale{}, a.saleAnswer("prepare sale", err)
	}
	if !in.ClosesAt.IsZero() {
		if _, err := a.Sales.SetEnd(ctx, in.SKU, in.ClosesAt); err != nil {
			return contract.PreparedSale{}, a.saleAnswer("prepare sale", err)
		}
	}
	return contract.PreparedSale{SeedHash: h}, nil
}

// SetSaleEnd moves the sale's end in Redis (sale.Store.SetEnd), where
// every API instance's spend reads it.
func (a *Activities) SetSaleEnd(ctx context.Context, in contract.SetSaleEndInput) (sale.State, error) {
	st, err := a.Sales.SetEnd(ctx, in.SKU, in.ClosesAt)
	if err != nil {
		return st, a.saleAnswer("set sale end", err)
	}
	return st, nil
}

// OpenSale freezes the entrants, ranks them by the seed, opens the sale
// and reveals the seed (sale.Store.Open). It heartbeats the ranks written,
// chunk by chunk: a worker lost mid-shuffle is seen by the heartbeat
// timeout, and the retry writes only the ranks it had not.
func (a *Activities) OpenSale(ctx context.Context, in contract.SaleRequest) (flashsale.OpenedSale, error) {
	o, err := a.Sales.Open(ctx, in.SKU, func(ranked int64) { activity.RecordHeartbeat(ctx, ranked) })
	if err != nil {
		return flashsale.OpenedSale{}, a.saleAnswer("open sale", err)
	}
	return o, nil
}

// SetSaleState writes a sale's new state, which every API instance reads
// on its next request of the SKU. A close also closes the SKU's waitlist:
// nothing is sold after it, so a unit an unpaid order gives back goes back
// to the buckets instead of becoming a waiting buyer's order.
func (a *Activities) SetSaleState(ctx context.Context, in contract.SaleStateChange) (sale.State, error) {
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

// voidSettle is how long CancelSaleOrders looks again for orders the
// previous pass could not see yet (visibility lags by about a second).
const voidSettle = 2 * time.Second

// CancelSaleOrders cancels every running order of the sale's SKU (their
// compensation gives the units back), then looks again after voidSettle,
// until a pass finds none it has not cancelled yet (an order still
// compensating is still running). The sale is closed first (SaleWorkflow),
// so no new order can start meanwhile but one already admitted.
// Idempotent: a finished order is skipped, a retry signals again.
func (a *Activities) CancelSaleOrders(ctx context.Context, in contract.SaleRequest) (contract.VoidedOrders, error) {
	var out contract.VoidedOrders
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
func (a *Activities) RefundSaleOrders(ctx context.Context, in contract.RefundSaleInput) (contract.RefundedOrders, error) {
	var out contract.RefundedOrders
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

// settlePoll is how often AwaitSaleSettled looks; two calm looks this far
// apart cover visibility's lag (about a second).
const settlePoll = 2 * time.Second

// AwaitSaleSettled returns once the closed sale's SKU has settled: no
// order workflow of it runs (none unpaid, none compensating) and MySQL
// holds none of its units frozen, seen twice settlePoll apart. It
// heartbeats while it waits, for as long as unpaid orders have to pay.
func (a *Activities) AwaitSaleSettled(ctx context.Context, in contract.SaleRequest) (contract.SaleSettled, error) {
	var out contract.SaleSettled
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
func (a *Activities) CheckSaleStock(ctx context.Context, in contract.SaleRequest) (contract.StockObservation, error) {
	r := &Reconciler{Stock: a.Stock, Orders: a.Orders, Logger: a.Logger, OrderWorkflowID: a.OrderWorkflowID}
	res, err := r.ObserveStock(ctx, contract.ObserveStockInput{SKUs: []string{in.SKU}})
	if err != nil {
		return contract.StockObservation{}, err
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

// ReportSale reads the sale's report: its ledger from MySQL and its
// queue's figures from Redis. It only reads, so it is run before the
// sale's keys are removed and its result is kept in the history.
func (a *Activities) ReportSale(ctx context.Context, in contract.SaleReportInput) (contract.SaleReport, error) {
	l, err := a.Orders.SaleLedger(ctx, in.SKU, in.Since)
	if err != nil {
		return contract.SaleReport{}, err
	}
	inv, err := a.Orders.Inventory(ctx, in.SKU)
	if err != nil {
		return contract.SaleReport{}, a.saleAnswer("report sale", err)
	}
	out := contract.SaleReport{UnitsSold: l.Units[flashsale.StatusPaid], Orders: l.Orders, Revenue: l.Revenue,
		Refunds: l.Refunds, RefundAmount: l.RefundAmount, RefundedOrders: l.Refunded, Available: inv.Available}
	b, err := a.Sales.BoardOf(ctx, in.SKU)
	switch {
	case flashsale.ErrorCode(err) == flashsale.NoSale:
		return out, nil
	case err != nil:
		return contract.SaleReport{}, err
	}
	out.Fairness = &contract.SaleFairness{Entrants: b.Entrants, Queued: b.Queued, PassesIssued: b.Serving, PassesUsed: b.Spent,
		PassesUnused: b.Outstanding, PassesExpired: max(0, b.Serving-b.Spent-b.Outstanding)}
	return out, nil
}

// EndSale marks the SKU's sale ended in MySQL (orderdb.Store.EndSale):
// from then on reconciliation and the checker leave its Redis keys to
// RemoveSaleKeys. A retry answers the first call's time.
func (a *Activities) EndSale(ctx context.Context, in contract.SaleRequest) (contract.EndedSale, error) {
	at, err := a.Orders.EndSale(ctx, in.SKU)
	if err != nil {
		return contract.EndedSale{}, a.saleAnswer("end sale", err)
	}
	return contract.EndedSale{EndedAt: at}, nil
}

// RemoveSaleKeys removes every Redis key of the ended sale's SKU
// (inventory.Store.RemoveSKU): buckets and the units' markers, the
// per-buyer counts, the waitlist, sold-out flags, the queue, its ranks,
// passes and seed. Before each batch it checks that MySQL still marks the
// sale ended at in.EndedAt: a retry after the SKU went on sale again (a
// preheat clears the mark) removes nothing of the new sale. Removing is
// idempotent, so a retry after a crash removes what is left and nothing
// twice.
func (a *Activities) RemoveSaleKeys(ctx context.Context, in contract.RemoveSaleKeysInput) (contract.RemovedSaleKeys, error) {
	var out contract.RemovedSaleKeys
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

// PreflightSale runs the go/no-go (Activities.Preflight); with in.Hold, a
// failing check marks the sale of in.SKUs[0] to open PAUSED
// (sale.Store.Hold) before the answer, so the open that follows sells
// nothing until an operator resumes.
func (a *Activities) PreflightSale(ctx context.Context, in contract.PreflightInput) (contract.PreflightReport, error) {
	if a.Preflight == nil {
		return contract.PreflightReport{}, refuse("preflight", flashsale.Errorf(flashsale.Invalid, "this worker runs no go/no-go"))
	}
	rep, err := a.Preflight(ctx, in)
	if err != nil || len(rep.Failed) == 0 || !in.Hold || len(in.SKUs) == 0 {
		return rep, err
	}
	if _, err := a.Sales.Hold(ctx, in.SKUs[0]); err != nil {
		return rep, a.saleAnswer("hold the open", err)
	}
	a.Logger.Warn("go/no-go failed: the sale opens PAUSED", "sku_id", in.SKUs[0], "failed", rep.Failed)
	return rep, nil
}
