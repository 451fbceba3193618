package sale

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/flashsale/flashsale"
)

// A pass's life after it was issued: spent on a buy, then settled once
// the order has its answer.

// Spend spends the pass of rank (its signed expiry) on orderID. The same
// order again is no error (a retried buy); another order is PassUsed; a
// pass not outstanding is PassExpired; a sale not open is SaleNotOpen,
// SalePaused or SaleClosed.
func (s *Store) Spend(ctx context.Context, sku string, rank int64, expiry time.Time, orderID string) (err error) {
	return s.spend(ctx, sku, "", rank, expiry, orderID)
}

// spend is Spend of a pass of sale saleID ("": of the sale running):
// PassForeign for a pass of another sale of the SKU.
func (s *Store) spend(ctx context.Context, sku, saleID string, rank int64, expiry time.Time, orderID string) (err error) {
	defer outage(&err)
	res, err := spendScript.Run(ctx, s.rdb, keys(sku), strconv.FormatInt(rank, 10), expiry.UnixMilli(), orderID, saleID).Text()
	if err != nil {
		return fmt.Errorf("spend pass %d of %s: %w", rank, sku, err)
	}
	switch res {
	case "OK", "REPEAT":
		return nil
	case "USED":
		return flashsale.Errorf(flashsale.PassUsed, "this pass has bought its unit already")
	case "FOREIGN":
		return flashsale.Errorf(flashsale.PassForeign, "this pass is of another sale of %s", sku)
	case "EXPIRED":
		return flashsale.Errorf(flashsale.PassExpired, "this pass expired; its unit went to the next buyer")
	}
	return StateError(sku, State(res))
}

// Settle settles the pass of rank, spent on orderID, once the order has
// its answer (sale_settle.lua): bought, it leaves the passes outstanding,
// spent for good; not bought, it is given back to its holder, outstanding
// again while a unit is left for it, else released (its holder is told the
// sell-out). Until then a spent pass counts as outstanding: its unit is
// still in the buckets. Idempotent: only the order the pass was spent on
// settles it, once.
func (s *Store) Settle(ctx context.Context, sku string, rank int64, expiry time.Time, orderID string, bought bool) (err error) {
	defer outage(&err)
	// Only a pass given back asks whether a unit is left for it: a bought
	// one (most of them, on the buy's path) costs no read of the buckets.
	outcome, units, before := "bought", int64(0), int64(0)
	if !bought {
		outcome = "nothing"
		if units, before, err = s.units(ctx, sku); err != nil {
			return err
		}
	}
	if err := settleScript.Run(ctx, s.rdb, keys(sku), strconv.FormatInt(rank, 10), expiry.UnixMilli(), orderID, units, outcome,
		before).Err(); err != nil {
		return fmt.Errorf("settle pass %d of %s (%s): %w", rank, sku, outcome, err)
	}
	return nil
}
