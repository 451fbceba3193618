package activities

import (
	"context"
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
// seed (sale.Store.Prepare); the seed stays in Redis until the open.
func (a *Activities) PrepareSale(ctx context.Context, in contract.PrepareSaleInput) (contract.PreparedSale, error) {
	h, err := a.Sales.Prepare(ctx, in.SKU, in.SaleID, in.OpensAt, in.PassTTL)
	if err != nil {
		return contract.PreparedSale{}, a.saleAnswer("prepare sale", err)
	}
	return contract.PreparedSale{SeedHash: h}, nil
}

// OpenSale freezes the entrants, ranks them by the seed, opens the sale
// and reveals the seed (sale.Store.Open).
func (a *Activities) OpenSale(ctx context.Context, in contract.SaleRequest) (contract.OpenedSale, error) {
	o, err := a.Sales.Open(ctx, in.SKU)
	if err != nil {
		return contract.OpenedSale{}, a.saleAnswer("open sale", err)
	}
	return contract.OpenedSale{Entrants: o.Entrants, Seed: o.Seed, State: o.State}, nil
}

// SetSaleState writes a sale's new state, which every API instance reads
// on its next request of the SKU.
func (a *Activities) SetSaleState(ctx context.Context, in contract.SaleStateChange) (sale.State, error) {
	st, err := a.Sales.SetState(ctx, in.SKU, in.To, in.From...)
	if err != nil {
		return st, a.saleAnswer("set sale state", err)
	}
	return st, nil
}

// voidSettle is how long CancelSaleOrders looks again for orders the
// previous pass could not see yet (visibility lags by about a second).
const voidSettle = 2 * time.Second

// CancelSaleOrders cancels every running order of the sale's SKU (their
// compensation gives the units back), then looks again after voidSettle,
// until a pass finds none. The sale is closed first (SaleWorkflow), so no
// new order can start meanwhile but one already admitted. Idempotent: a
// finished order is skipped.
func (a *Activities) CancelSaleOrders(ctx context.Context, in contract.SaleRequest) (contract.VoidedOrders, error) {
	var out contract.VoidedOrders
	for {
		n, err := a.CancelRunningOrders(ctx, in.SKU, "sale voided")
		out.Cancelled += n
		if err != nil {
			return out, err
		}
		activity.RecordHeartbeat(ctx, out.Cancelled)
		if n == 0 {
			return out, nil
		}
		select {
		case <-ctx.Done():
			return out, ctx.Err()
		case <-time.After(voidSettle):
		}
	}
}

// saleAnswer makes a business answer non-retryable; an outage is retried.
func (a *Activities) saleAnswer(op string, err error) error {
	switch flashsale.ErrorCode(err) {
	case flashsale.SaleStateConflict, flashsale.NoSale, flashsale.Invalid:
		return refuse(op, err)
	}
	return err
}
