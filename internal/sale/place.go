package sale

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flashsale/flashsale"
)

// A buyer's side of the queue: entering it, and looking at their place
// (which moves the serving counter on).

// Ticket is a buyer's entry in a queue.
type Ticket struct {
	SKU    string `json:"sku_id"`
	UserID string `json:"user_id"`
	State  State  `json:"state"`
	// Ticket is the buyer's place in the order of entry before the open;
	// it decides nothing (the shuffle does). Zero for a buyer who entered
	// after the freeze.
	Ticket int64 `json:"ticket,omitempty"`
	// Rank is the buyer's place in the queue (1 is first), once ranked.
	Rank int64 `json:"rank,omitempty"`
	// SeedHash is the commitment to the seed, published from the start.
	SeedHash string `json:"seed_hash"`
	// Entered is true when this request entered the buyer; a repeat
	// answers the same ticket.
	Entered bool `json:"-"`
}

// Enter enters userID in sku's queue, once: NoSale for a SKU without a
// sale, SaleClosed once it is over, QueueFull once it holds the sale's
// max entrants.
func (s *Store) Enter(ctx context.Context, sku, userID string) (_ Ticket, err error) {
	defer outage(&err)
	if err := checkSKU(sku); err != nil {
		return Ticket{}, err
	}
	res, err := enterScript.Run(ctx, s.rdb, keys(sku), userID).Slice()
	if err != nil {
		return Ticket{}, fmt.Errorf("enter queue of %s: %w", sku, err)
	}
	t := Ticket{SKU: sku, UserID: userID, State: State(res[0].(string)), Ticket: res[1].(int64), Rank: res[2].(int64),
		Entered: res[3].(int64) == 1, SeedHash: res[4].(string)}
	switch {
	case t.State == "":
		return Ticket{}, noSale(sku)
	case t.State == "FULL":
		return Ticket{}, flashsale.Errorf(flashsale.QueueFull, "the queue of %s is full", sku)
	case t.State == Closed && t.Ticket == 0 && t.Rank == 0:
		return Ticket{}, flashsale.Errorf(flashsale.SaleClosed, "the sale of %s is closed", sku)
	}
	return t, nil
}

// Place is a buyer's place in a sale: GET /api/v1/skus/{sku}/queue/me.
type Place struct {
	Ticket
	// Serving is the highest rank a pass was issued to.
	Serving int64 `json:"serving"`
	// Queued is how many buyers hold a rank.
	Queued int64 `json:"queued"`
	// Outstanding is how many passes hold a unit: issued, not expired,
	// and not settled (a spent pass counts until its order's answer, its
	// unit still in the buckets): what the counter bounds by the units
	// left.
	Outstanding int64 `json:"outstanding"`
	// Capacity is the placement capacity the counter read: the units the
	// live API instances can have in flight, summed. Passes outstanding
	// never exceed it (nor the units left).
	Capacity int64 `json:"capacity"`
	// Ahead is how many ranks are before the buyer's and not yet served.
	Ahead int64 `json:"ahead"`
	// SaleID is the sale's id, which the buyer's pass names.
	SaleID string `json:"-"`
	// PassExpiry is when the buyer's outstanding pass expires (Redis's
	// clock); zero when they hold none.
	PassExpiry time.Time `json:"-"`
	// Spent is true once the buyer's pass bought its unit.
	Spent bool `json:"pass_spent,omitempty"`
	// SoldOut: the sale is open and its buckets are empty: nothing is
	// left for anyone still queued, whether they hold a pass or not (the
	// serving counter reads the units just before its script, so a pass
	// may go out for a unit a buy in flight is taking). Like the SOLD_OUT
	// of a buy it may turn back: a unit an unpaid order gives back is
	// passed on in rank order, and a pass held meanwhile buys it.
	SoldOut bool `json:"sold_out,omitempty"`
	// Seed is the seed, revealed once the ranks are written: with the
	// entrants' ids, Ranks reproduces every rank.
	Seed string `json:"seed,omitempty"`
	// ETA estimates how long until the buyer's pass, in seconds: until
	// opens_at before the open; 0 while they hold a pass; for a rank still
	// waiting, the ranks ahead over the pace at which ranks have been
	// served since the counter's first move (passes spent or expired, units
	// come back). Nil when there is nothing to estimate from (no rank served
	// since the first move, or nothing left: SoldOut) or nothing to wait for
	// (the pass was spent).
	ETA *int64 `json:"eta_seconds,omitempty"`
}

// PlaceOf is userID's place in sku's sale. Reading it moves the serving
// counter on (sale_me.lua): the units left are read first. NoSale for a
// SKU without a sale, NotInQueue for a buyer who did not enter.
func (s *Store) PlaceOf(ctx context.Context, sku, userID string) (_ Place, err error) {
	defer outage(&err)
	p, _, err := s.look(ctx, sku, userID)
	switch {
	case err != nil:
		return Place{}, err
	case p.Ticket.Ticket == 0 && p.Rank == 0:
		return Place{}, flashsale.Errorf(flashsale.NotInQueue, "not in the queue of %s", sku)
	}
	return p, nil
}

// Counter is a sale's serving counter as one look left it: what decides
// whether a buyer waiting for their pass (Waits) has something new to read,
// and the rest of that look, from which a waiter's place is told without a
// look of its own (Place.At).
type Counter struct {
	State   State
	Serving int64
	// SoldOut: the sale is open and its buckets are empty (Place.SoldOut).
	SoldOut bool

	queued, outstanding, capacity int64
	seed                          string
	clock                         etaClock
}

// etaClock is what a look read for the ETA besides the place: Redis's
// clock, the sale's opens_at and the counter's first move (all unix ms but
// first, a rank).
type etaClock struct{ now, opensAt, first, firstAt int64 }

// At is p as the counter c left it: the counter's half of a look (look
// itself reads a place through it). For a place c did not serve (its rank
// beyond c's serving, or the SKU sold out, or the sale no longer OPEN) it
// is what a look of the buyer's own would have read at c's moment, without
// one. At a sell-out every waiter of the SKU is answered at once, and their
// answers are the same; a held look that ends without news is answered the
// counter the watcher read last, not with a look of its own (a crowd whose
// looks end together would otherwise look together).
func (p Place) At(c Counter) Place {
	p.State, p.Serving, p.SoldOut = c.State, c.Serving, c.SoldOut
	p.Queued, p.Outstanding, p.Capacity = c.queued, c.outstanding, c.capacity
	if c.seed != "" {
		p.Seed = c.seed
	}
	p.Ahead = 0
	if p.Rank > p.Serving {
		p.Ahead = p.Rank - p.Serving - 1
	}
	p.ETA = eta(p, c.clock.now, c.clock.opensAt, c.clock.first, c.clock.firstAt)
	return p
}

// Serve moves sku's serving counter on, like any look at the queue
// (PlaceOf) but on nobody's behalf, and answers where it stands. NoSale
// for a SKU without a sale.
func (s *Store) Serve(ctx context.Context, sku string) (_ Counter, err error) {
	defer outage(&err)
	_, c, err := s.look(ctx, sku, "")
	return c, err
}

// look runs sale_me.lua for userID ("" looks on nobody's behalf: no
// ticket, no rank) after reading the units left, and answers the place and
// the counter it read. NoSale for a SKU without a sale.
func (s *Store) look(ctx context.Context, sku, userID string) (Place, Counter, error) {
	if err := checkSKU(sku); err != nil {
		return Place{}, Counter{}, err
	}
	units, err := s.stock(ctx, sku)
	if err != nil && flashsale.ErrorCode(err) != flashsale.UnknownSKU {
		return Place{}, Counter{}, fmt.Errorf("units of %s: %w", sku, err)
	}
	me := func(units int64, bought any) ([]any, error) {
		return meScript.Run(ctx, s.rdb, keys(sku), userID, units, s.instance, s.capacity,
			s.capacityTTL.Milliseconds(), bought).Slice()
	}
	res, err := me(units, "")
	if err == nil && len(res) == 1 {
		// Near the end: the units again, exactly (sale_me.lua).
		var bought int64
		if units, bought, err = s.units(ctx, sku); err != nil {
			return Place{}, Counter{}, err
		}
		res, err = me(units, bought)
	}
	if err != nil {
		return Place{}, Counter{}, fmt.Errorf("queue place in %s: %w", sku, err)
	}
	state := State(res[0].(string))
	if state == "" {
		return Place{}, Counter{}, noSale(sku)
	}
	c := Counter{State: state, Serving: res[3].(int64), SoldOut: state == Open && units == 0,
		queued: res[4].(int64), outstanding: res[9].(int64), capacity: res[14].(int64), seed: res[8].(string),
		clock: etaClock{now: res[10].(int64), opensAt: res[11].(int64), first: res[12].(int64), firstAt: res[13].(int64)}}
	p := Place{
		Ticket: Ticket{SKU: sku, UserID: userID, Ticket: res[1].(int64), Rank: res[2].(int64), SeedHash: res[7].(string)},
		Spent:  res[6].(int64) == 1, SaleID: res[15].(string),
	}
	if ms := res[5].(int64); ms > 0 {
		p.PassExpiry = time.UnixMilli(ms)
	}
	// The buyer's own half of the look, then the counter's (At): a waiter
	// told from the counter alone reads the same fields the same way.
	p = p.At(c)
	// A buyer who spent their pass bought: never told sold out.
	p.SoldOut = p.SoldOut && !p.Spent
	return p, c, nil
}

// units reads sku's units left in its buckets, and before them the
// passes its sale counted bought: the scripts take the passes bought
// between the two reads off the units (sale_me.lua), so a pass never goes
// out for a unit a buy took meanwhile.
func (s *Store) units(ctx context.Context, sku string) (units, bought int64, err error) {
	bought, err = s.rdb.HGet(ctx, saleKey(sku), "bought").Int64()
	if err != nil && !errors.Is(err, redis.Nil) {
		return 0, 0, fmt.Errorf("passes bought of %s: %w", sku, err)
	}
	units, err = s.stock(ctx, sku)
	if err != nil && flashsale.ErrorCode(err) != flashsale.UnknownSKU {
		return 0, 0, fmt.Errorf("units of %s: %w", sku, err)
	}
	return units, bought, nil
}

// eta is Place.ETA, in whole seconds (rounded up), from Redis's clock:
// now, the sale's opens_at, and the serving counter's first move (rank
// first at firstAt, unix ms).
func eta(p Place, now, opensAt, first, firstAt int64) *int64 {
	secs := func(ms int64) *int64 {
		s := (max(ms, 0) + 999) / 1000
		return &s
	}
	switch {
	case p.State == Prequeue:
		return secs(opensAt - now)
	case p.State != Open || p.Spent || p.SoldOut:
		return nil
	case !p.PassExpiry.IsZero():
		return secs(0)
	case p.Rank == 0 || p.Rank <= p.Serving:
		return nil
	}
	// Ranks served since the first move (each by a pass spent or expired
	// or a unit come back), per millisecond.
	back, since := p.Serving-first, now-firstAt
	if first == 0 || back <= 0 || since <= 0 {
		return nil
	}
	return secs((p.Ahead + 1) * since / back)
}

// RankOf is userID's rank in sku's sale (0 while not ranked yet) and the
// sale's state: NoSale for a SKU without a sale, NotInQueue for a buyer
// who did not enter.
func (s *Store) RankOf(ctx context.Context, sku, userID string) (_ int64, _ State, err error) {
	defer outage(&err)
	if err := checkSKU(sku); err != nil {
		return 0, "", err
	}
	ks := keys(sku)
	var state *redis.StringCmd
	var rank *redis.FloatCmd
	var entered *redis.BoolCmd
	if _, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		state = p.HGet(ctx, ks[kSale], "state")
		rank = p.ZScore(ctx, ks[kRank], userID)
		entered = p.HExists(ctx, ks[kEntered], userID)
		return nil
	}); err != nil && !errors.Is(err, redis.Nil) {
		return 0, "", fmt.Errorf("rank in %s: %w", sku, err)
	}
	st := State(state.Val())
	switch {
	case st == "":
		return 0, "", noSale(sku)
	case rank.Err() == nil:
		return int64(rank.Val()), st, nil
	case entered.Val():
		return 0, st, nil
	}
	return 0, st, flashsale.Errorf(flashsale.NotInQueue, "not in the queue of %s", sku)
}
