package activities

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/activities/contract"
)

// errResyncAgain is retried by the activity's retry policy: something moved
// while the resync looked, so it looks again.
var errResyncAgain = errors.New("stock moved during the resync; comparing again")

// DefaultResyncSettle separates the two observations of a resync.
const DefaultResyncSettle = 2 * time.Second

// ResyncStock brings a SKU's Redis buckets back in step with MySQL after
// orders were reserved or closed in MySQL alone (Redis was down; see
// degraded.go), then clears the SKU's resync flag so buyers use Redis again.
// It fails (retryably) until Redis answers, so the activity's retry policy
// is the wait for Redis to come back.
//
// It is the reconciler's correction (see Reconciler): two observations that
// must agree exactly on drift and fence, then a relative move under the
// fence. The observations are only Settle apart (seconds, not the
// reconciler's minute) because the flag keeps the SKU MySQL-only: no order
// takes from its buckets while it is set, so the slow transient the
// reconciler waits out (a take that MySQL refuses, whose workflow has not
// ended yet) does not happen. The fast ones do: a release of an order
// reserved before the outage lands between an observation's bucket read and
// its marker read (the unit is in neither), and its gen bump, which would
// tear the observation, comes a round trip later. The second observation
// sees it settled, the two disagree, and the activity compares again.
//
// The flag is read before Redis and MySQL are compared and cleared with a
// compare-and-set on that value: a degraded order that moved units after
// the read makes the clear fail, and the activity compares again, so its
// move is always in some comparison that was acted on.
func (r *Reconciler) ResyncStock(ctx context.Context, in contract.ResyncStockInput) (contract.ResyncStockResult, error) {
	flags, err := r.Orders.ResyncPending(ctx, []string{in.SKU})
	if err != nil {
		return contract.ResyncStockResult{}, err
	}
	flag, known := flags[in.SKU]
	if !known {
		return contract.ResyncStockResult{}, refuse("resync "+in.SKU, &flashsale.Error{Code: flashsale.UnknownSKU})
	}
	if flag == 0 {
		return contract.ResyncStockResult{}, nil
	}
	res := contract.ResyncStockResult{Flag: flag}

	obs, err := r.observe(ctx, in.SKU)
	if err != nil {
		return contract.ResyncStockResult{}, fmt.Errorf("resync %s: %w", in.SKU, err)
	}
	if !obs.Missing && !obs.Torn && !obs.UnknownSKU {
		first := obs
		if err := sleepCtx(ctx, r.resyncSettle()); err != nil {
			return contract.ResyncStockResult{}, err
		}
		if obs, err = r.observe(ctx, in.SKU); err != nil {
			return contract.ResyncStockResult{}, fmt.Errorf("resync %s: %w", in.SKU, err)
		}
		if !obs.Missing && (obs.Drift != first.Drift || obs.Fence != first.Fence) {
			return contract.ResyncStockResult{}, errResyncAgain
		}
	}
	res.Observation = &obs
	switch {
	case obs.UnknownSKU:
		return contract.ResyncStockResult{}, refuse("resync "+in.SKU, &flashsale.Error{Code: flashsale.UnknownSKU})
	case obs.Missing:
		// Redis came back empty: rebuild the SKU from MySQL, as the
		// reconciler does.
		restored, err := r.RestoreStock(ctx, contract.RestoreStockInput(in))
		if err != nil {
			return contract.ResyncStockResult{}, err
		}
		res.Restored = restored.Restored
	case obs.Torn:
		return contract.ResyncStockResult{}, errResyncAgain
	case obs.Drift != 0:
		id := fmt.Sprintf("resync-%d-%d", flag, obs.Fence)
		claimed, err := r.Stock.ClaimCorrection(ctx, in.SKU, obs.Fence, id)
		if err != nil {
			return contract.ResyncStockResult{}, classifyStockErr("resync "+in.SKU, err)
		}
		if !claimed {
			return contract.ResyncStockResult{}, errResyncAgain
		}
		if res.Applied, err = r.Stock.Adjust(ctx, in.SKU, obs.Drift, id); err != nil {
			return contract.ResyncStockResult{}, classifyStockErr("resync "+in.SKU, err)
		}
		if res.Applied != obs.Drift {
			// Fewer units could be removed than Redis is over: the rest
			// are held by orders in flight whose release is still to
			// come (drift counted them), and the buckets cannot go below
			// zero. Once those releases land, the next pass removes the
			// rest; until then the flag stays and the SKU MySQL-only.
			r.logger(ctx).Warn("redis resync partly applied; waiting for releases in flight",
				"sku_id", in.SKU, "drift", obs.Drift, "applied", res.Applied, "in_flight", obs.InFlight)
			return contract.ResyncStockResult{}, errResyncAgain
		}
	}

	cleared, err := r.Orders.FinishResync(ctx, in.SKU, flag)
	if err != nil {
		return contract.ResyncStockResult{}, err
	}
	if !cleared {
		return contract.ResyncStockResult{}, errResyncAgain
	}
	r.logger(ctx).Warn("redis re-synced from mysql after degraded orders",
		"sku_id", in.SKU, "flag", flag, "drift", obs.Drift, "applied", res.Applied, "restored", res.Restored)
	return res, nil
}

func (r *Reconciler) resyncSettle() time.Duration {
	if r.ResyncSettle > 0 {
		return r.ResyncSettle
	}
	return DefaultResyncSettle
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
