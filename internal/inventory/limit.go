package inventory

// The per-buyer limit before the reservation. MySQL's CreateOrder counts a
// buyer's units after Redis handed them out, so a buyer over the limit used
// to hold units (and a workflow) until MySQL refused. Here the limit of the
// current sale is kept in the SKU's slot with a count per buyer, and
// limit_take.lua counts an order's units before Reserve touches a bucket:
// an order over the limit is refused holding nothing. Release and Reserve's
// own give-backs return the units (limit_give.lua); paid orders are never
// released, so their units stay counted for the sale, as in MySQL. MySQL
// stays the final guard: what Redis does not know (a SKU loaded without a
// PUT, orders reserved while Redis was down, a count expired after the
// held TTL) only makes this check more lenient, never stricter.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/flashsale/flashsale"

	"github.com/redis/go-redis/v9"
)

// SetLimit records sku's per-buyer limit for the sale that started at
// sale (the SKU's sale_started_at in Unix milliseconds, moved by every PUT
// of the SKU). Counts of buyers from another sale read as zero from then
// on, and expire with the held TTL. Call it before the buckets are loaded,
// so buyers never find stock without its limit.
func (s *Store) SetLimit(ctx context.Context, sku string, limit int, sale int64) (err error) {
	defer codeOutage(&err)
	if err := validateSKU(sku); err != nil {
		return fmt.Errorf("set limit %s: %w", sku, err)
	}
	if limit < 1 || sale < 0 {
		return fmt.Errorf("set limit %s: %w", sku, invalidf("limit %d, sale %d", limit, sale))
	}
	if err := s.rdb.Set(ctx, limitKey(sku), strconv.Itoa(limit)+":"+strconv.FormatInt(sale, 10), 0).Err(); err != nil {
		return fmt.Errorf("set limit %s: %w", sku, err)
	}
	// Reserve skips the count for a SKU cached as having no limit; this
	// process sees the new one at once, others within layoutCacheTTL.
	s.layouts.forget(sku)
	return nil
}

// SetQueued copies whether sku is sold through a fair sale only
// (MySQL's inventory.queued) to Redis (QueuedKey), where the buy's check
// reads it: a queued SKU without a sale refuses every buy. The preheat
// writes it before the buckets, so no unit is on sale before it.
func (s *Store) SetQueued(ctx context.Context, sku string, queued bool) (err error) {
	defer codeOutage(&err)
	if err := validateSKU(sku); err != nil {
		return fmt.Errorf("set queued %s: %w", sku, err)
	}
	if queued {
		err = s.rdb.Set(ctx, QueuedKey(sku), "1", 0).Err()
	} else {
		err = s.rdb.Del(ctx, QueuedKey(sku)).Err()
	}
	if err != nil {
		return fmt.Errorf("set queued %s: %w", sku, err)
	}
	return nil
}

// Allowance is what a buyer may still reserve of a SKU, as Redis counts it.
type Allowance struct {
	// Limit is the per-buyer limit of the current sale; 0 when Redis does
	// not know it (only MySQL then checks).
	Limit int64
	// Held is the units the buyer's reserved, unpaid or paid orders of the
	// current sale hold.
	Held int64
}

// Allows reports whether qty more units fit the buyer's limit.
func (a Allowance) Allows(qty int64) bool { return a.Limit == 0 || a.Held+qty <= a.Limit }

// parseAllowance reads the limit key and a buyer's count from an MGET
// reply.
func parseAllowance(lim, held any) (Allowance, error) {
	ls, ok := lim.(string)
	if !ok {
		return Allowance{}, nil
	}
	limStr, sale, ok := strings.Cut(ls, ":")
	limit, err := strconv.ParseInt(limStr, 10, 64)
	if !ok || err != nil || limit < 1 {
		return Allowance{}, fmt.Errorf("corrupt limit %q", ls)
	}
	a := Allowance{Limit: limit}
	hs, ok := held.(string)
	if !ok {
		return a, nil
	}
	hsale, n, ok := strings.Cut(hs, ":")
	units, err := strconv.ParseInt(n, 10, 64)
	if !ok || err != nil {
		return Allowance{}, fmt.Errorf("corrupt held count %q", hs)
	}
	if hsale == sale {
		a.Held = units
	}
	return a, nil
}

// limitExceeded is the refusal of an order over its buyer's limit. It does
// not name the buyer: errors end in logs, where a buyer is named only by
// digest (flashsale.BuyerLogAttr), by the door that knows the key.
func limitExceeded(qty, held, limit int64) error {
	return fmt.Errorf("buyer holds %d, wants %d more, limit %d: %w",
		held, qty, limit, flashsale.Errorf(flashsale.LimitExceeded, "per-user limit exceeded"))
}

// claim counts qty units of orderID against userID's limit for sku
// (limit_take.lua): nil when counted (now or by an earlier attempt) or when
// nothing is to be counted, a LimitExceeded error when over the limit
// (never with pastLimit, which counts the units regardless). An empty
// userID counts nothing.
func (s *Store) claim(ctx context.Context, userID, orderID, sku string, qty int64, pastLimit bool) error {
	if userID == "" {
		return nil
	}
	force := "0"
	if pastLimit {
		force = "1"
	}
	res, err := limitTakeScript.Run(ctx, s.rdb,
		[]string{limitKey(sku), heldKey(sku, userID), claimKey(sku, orderID)},
		userID, qty, s.heldMs, force).Int64Slice()
	if err != nil {
		return fmt.Errorf("count against the limit: %w", err)
	}
	if len(res) != 3 {
		return fmt.Errorf("count against the limit: unexpected reply %v", res)
	}
	if res[0] == -1 {
		return limitExceeded(qty, res[1], res[2])
	}
	return nil
}

// unclaim gives orderID's counted units of sku back to its buyer
// (limit_give.lua) in mode, and returns how many it gave now. The buyer
// is read from the claim; a claim written between that read and the
// script is read again.
func (s *Store) unclaim(ctx context.Context, orderID, sku, mode string) (int64, error) {
	for range 3 {
		v, err := s.rdb.Get(ctx, claimKey(sku, orderID)).Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			return 0, fmt.Errorf("give back to the limit: %w", err)
		}
		user := claimUser(v)
		res, err := limitGiveScript.Run(ctx, s.rdb,
			[]string{heldKey(sku, user), claimKey(sku, orderID)},
			mode, s.heldMs, user).Int64Slice()
		if err != nil {
			return 0, fmt.Errorf("give back to the limit: %w", err)
		}
		if len(res) != 2 {
			return 0, fmt.Errorf("give back to the limit: unexpected reply %v", res)
		}
		switch res[0] {
		case 1:
			return res[1], nil
		case -1:
			continue
		default:
			return 0, nil
		}
	}
	return 0, errors.New("give back to the limit: the order's claim keeps changing")
}

// claimUser is the user a claim value names ("" for none).
func claimUser(v string) string {
	// "<state><units>:<sale>:<user>": the user is everything after the
	// second ':' (user ids may contain ':').
	_, rest, ok := strings.Cut(v, ":")
	if !ok {
		return ""
	}
	_, user, _ := strings.Cut(rest, ":")
	return user
}
