package activities

import (
	"context"
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
// on its next request of the SKU.
func (a *Activities) SetSaleState(ctx context.Context, in SaleStateChange) (sale.State, error) {
	st, err := a.Sales.SetState(ctx, in.SKU, in.To, in.From...)
	if err != nil {
		return st, a.saleAnswer("set sale state", err)
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
// until a pass finds none. The sale is closed first (SaleWorkflow), so no
// new order can start meanwhile but one already admitted. Idempotent: a
// finished order is skipped.
func (a *Activities) CancelSaleOrders(ctx context.Context, in SaleRequest) (VoidedOrders, error) {
	var out VoidedOrders
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
