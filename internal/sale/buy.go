package sale

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/internal/redisguard"

	"github.com/redis/go-redis/v9"
)

// Door is the sale's part of a buy (internal/buying): a SKU without a sale
// passes untouched; a buy of a SKU with one must be one unit, while the
// sale is OPEN, with a pass of the buyer's for it, spent once the edge
// admitted the buy.
type Door struct {
	store  *Store
	signer *Signer
	queued Queued

	mu sync.Mutex
	// sales are the SKUs seen with a sale, so a buy of one while Redis
	// does not answer is refused instead of sold without a pass. Only SKUs
	// read with a sale enter it (operators create those), capped anyway.
	sales map[string]struct{}
}

// maxKnownSales caps Door.sales.
const maxKnownSales = 10000

// Queued tells whether a SKU is sold through a fair sale only, from the
// store that answers while Redis does not (MySQL's inventory.queued, set
// by the SKU's PUT and by the start of its sale): UnknownSKU for a SKU not
// defined.
type Queued func(ctx context.Context, sku string) (bool, error)

// NewDoor returns the buy's check against store, verifying passes with
// signer; queued is asked about a SKU while Redis does not answer (nil:
// every SKU this instance cannot prove unqueued is refused then).
func NewDoor(store *Store, signer *Signer, queued Queued) *Door {
	return &Door{store: store, signer: signer, queued: queued, sales: map[string]struct{}{}}
}

// Claim is a verified pass, to be spent on the order once admitted.
type Claim struct {
	store *Store
	pass  Pass
	// Live: when Check read it, the pass was outstanding (issued with this
	// expiry, neither spent nor past it by this instance's clock). The
	// edge then admits the buy past its in-flight cap (edge.Request.Pass):
	// the serving counter bounded the passes outstanding by the placement
	// capacity. Spend stays the atomic judge; Live only lets the buyer by
	// the cap.
	Live bool
}

// Check returns nil and no error for a buy of SKUs without a sale, as
// before sales existed. For a sale's SKU it refuses a buy of several lines
// or units (Invalid), a sale not OPEN (SaleNotOpen, SalePaused,
// SaleClosed), a missing or forged pass (PassRequired) and another's
// (PassForeign), and otherwise returns the claim to spend. A SKU defined
// for a fair sale (queued) whose sale was not started yet is SaleNotOpen:
// nothing sells before its queue exists.
//
// While Redis does not answer it fails closed: a SKU is let on (the edge
// degrades) only when MySQL says it is not queued; a SKU this instance saw
// with a sale, a queued one, or one MySQL cannot answer for is
// Unavailable. A process that just started remembers no sale, so the
// memory alone let it sell a queued SKU before its open (issue 35). With
// this instance's Redis pool exhausted the buy is BUSY, whatever the SKU.
func (d *Door) Check(ctx context.Context, buyer string, items []flashsale.Item, token string) (*Claim, error) {
	var claim *Claim
	for _, it := range items {
		st, queued, err := d.store.modeOf(ctx, it.SKU)
		if err != nil {
			if flashsale.ErrorCode(err) == flashsale.Busy {
				return nil, err // this instance's Redis pool, not the sale, is the matter
			}
			if err := d.unqueued(ctx, it.SKU); err != nil {
				return nil, fmt.Errorf("%w: %w", flashsale.Errorf(flashsale.Unavailable, "the sale's queue is unavailable"), err)
			}
			continue
		}
		if st == "" && !queued {
			d.forget(it.SKU)
			continue
		}
		d.remember(it.SKU)
		if st == "" {
			return nil, flashsale.Errorf(flashsale.SaleNotOpen, "%s is sold through a fair sale, which has not started yet", it.SKU)
		}
		if st == Closed {
			// Also the end of a SKU sold without a queue (`sku close`),
			// whatever the buy's lines.
			return nil, StateError(it.SKU, st)
		}
		if len(items) != 1 || it.Quantity != 1 {
			return nil, flashsale.Errorf(flashsale.Invalid, "a pass of the sale of %s buys one unit, alone", it.SKU)
		}
		if st != Open {
			return nil, StateError(it.SKU, st)
		}
		p, err := d.signer.Verify(token, buyer, it.SKU)
		if err != nil {
			return nil, err
		}
		claim = &Claim{store: d.store, pass: p, Live: d.store.outstanding(ctx, it.SKU, p)}
	}
	return claim, nil
}

// outstanding reports whether p is outstanding: issued with its signed
// expiry (or later: a pause's length added), not spent (a spent pass counts among the outstanding ones until
// its order's answer, but is not the holder's any more), and not past the
// expiry by this instance's clock (a pass within the clocks' skew of its
// end is Spend's to refuse). A failed read is false: the buy then meets
// the edge's caps as any other.
func (s *Store) outstanding(ctx context.Context, sku string, p Pass) bool {
	k, rank := keys(sku), strconv.FormatInt(p.Rank, 10)
	var score *redis.FloatCmd
	var spent *redis.BoolCmd
	_, err := s.rdb.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		score = pipe.ZScore(ctx, k[kPasses], rank)
		spent = pipe.HExists(ctx, k[kSpent], rank)
		return nil
	})
	// A resume moves the expiry of the passes outstanding at the pause
	// on by its length (sale_state.lua): the signed one is then earlier.
	expiry := int64(score.Val())
	return err == nil && expiry >= p.Expiry.UnixMilli() && !spent.Val() && time.Now().Before(time.UnixMilli(expiry))
}

// Spend spends the claim's pass on orderID (Store.Spend).
func (c *Claim) Spend(ctx context.Context, orderID string) error {
	return c.store.spend(ctx, c.pass.SKU, c.pass.SaleID, c.pass.Rank, c.pass.Expiry, orderID)
}

// Settle settles the claim's pass once the order it was spent on has its
// answer: bought, or given back (Store.Settle).
func (c *Claim) Settle(ctx context.Context, orderID string, bought bool) error {
	return c.store.Settle(ctx, c.pass.SKU, c.pass.Rank, c.pass.Expiry, orderID, bought)
}

// unqueued is nil when sku is proved sold without a queue while Redis does
// not answer: not seen with a sale here, and MySQL says it is not queued
// (or does not know it: an unknown SKU sells nothing anyway).
func (d *Door) unqueued(ctx context.Context, sku string) error {
	if d.known(sku) {
		return fmt.Errorf("%s was seen with a sale", sku)
	}
	if d.queued == nil {
		return fmt.Errorf("no store to tell whether %s is queued", sku)
	}
	q, err := d.queued(ctx, sku)
	switch {
	case flashsale.ErrorCode(err) == flashsale.UnknownSKU:
		return nil
	case err != nil:
		return fmt.Errorf("whether %s is queued: %w", sku, err)
	case q:
		d.remember(sku)
		return fmt.Errorf("%s is queued", sku)
	}
	return nil
}

func (d *Door) known(sku string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	_, ok := d.sales[sku]
	return ok
}

func (d *Door) remember(sku string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.sales) < maxKnownSales {
		d.sales[sku] = struct{}{}
	}
}

func (d *Door) forget(sku string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.sales, sku)
}

// Issue signs the pass of a buyer's place, if they hold one.
func (d *Door) Issue(p Place) string {
	if p.PassExpiry.IsZero() {
		return ""
	}
	return d.signer.Sign(Pass{SaleID: p.SaleID, SKU: p.SKU, UserID: p.UserID, Rank: p.Rank, Expiry: p.PassExpiry})
}

// Store is the sales' store.
func (d *Door) Store() *Store { return d.store }

// outage codes a Redis failure Unavailable, and an exhausted pool Busy, as
// the stores do (redisguard.Code).
func outage(err *error) { redisguard.Code(err, "redis unavailable") }
