// Package sale is the per-request half of a fair sale (docs/design/fair-sale.md):
// the queue a buyer enters, the ranks the shuffle writes, the serving counter
// that issues passes in rank order while units remain, and the spending of a
// pass on a buy. Each step is one Lua script in the SKU's Redis slot; what
// decides the sale (when it opens, pauses, closes) is SaleWorkflow's, which
// writes the state through Prepare, Open and SetState.
package sale

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/internal/luascript"
)

// State is where a sale stands: the house's flashsale.SaleState, which
// SaleWorkflow decides and this store keeps.
type State = flashsale.SaleState

// States of a sale, in the order a sale goes through them (PAUSED and OPEN
// may alternate); see flashsale.SaleState.
const (
	Prequeue  = flashsale.SaleStatePrequeue
	Shuffling = flashsale.SaleStateShuffling
	Open      = flashsale.SaleStateOpen
	Paused    = flashsale.SaleStatePaused
	Closed    = flashsale.SaleStateClosed
)

//go:embed *.lua
var luaFiles embed.FS

func script(name string) *redis.Script { return luascript.Load(luaFiles, name) }

var (
	prepareScript = script("sale_prepare.lua")
	freezeScript  = script("sale_freeze.lua")
	revealScript  = script("sale_reveal.lua")
	stateScript   = script("sale_state.lua")
	enterScript   = script("sale_enter.lua")
	meScript      = script("sale_me.lua")
	spendScript   = script("sale_spend.lua")
	settleScript  = script("sale_settle.lua")
	boardScript   = script("sale_board.lua")
)

// Stock reads a SKU's units left in Redis (inventory.Store's AvailableTo
// with no buyer, its Units).
type Stock func(ctx context.Context, sku string) (int64, error)

// Store holds the sales of every SKU in Redis.
type Store struct {
	rdb   redis.UniversalClient
	stock Stock
	// instance, capacity and capacityTTL are what PlaceOf publishes into
	// a sale's capacity (WithCapacity).
	instance    string
	capacity    int64
	capacityTTL time.Duration
}

// DefaultCapacity is the placement capacity a Store publishes unless
// WithCapacity says otherwise: the edge's default per-SKU window
// (edge.DefaultMaxInFlight), what one API instance lets through at once.
const DefaultCapacity = 16

// DefaultCapacityTTL is how long an instance's published capacity lives
// without a refresh. Every look at the queue through the instance
// refreshes it, and a sale's buyers look every second or so: a few seconds
// keep a live instance in without a gap, and drop a dead one (its passes
// outstanding included, they expire or are spent) before its share of the
// capacity is handed out for long.
const DefaultCapacityTTL = 5 * time.Second

// New returns a store on rdb; stock is needed by Place only. It publishes
// DefaultCapacity under a random instance id.
func New(rdb redis.UniversalClient, stock Stock) *Store {
	id := make([]byte, 8)
	_, _ = rand.Read(id) // never fails (crypto/rand)
	return &Store{rdb: rdb, stock: stock, instance: hex.EncodeToString(id), capacity: DefaultCapacity,
		capacityTTL: DefaultCapacityTTL}
}

// WithCapacity returns a copy of s that publishes capacity units under
// its instance id (random, one per New) for ttl (DefaultCapacityTTL when not positive) on every look at
// a queue (PlaceOf). capacity is what the calling API instance can have in
// flight for one queued SKU: its edge's per-SKU window. The serving
// counter issues a pass only while the passes outstanding are fewer than
// both the units left and the sum of the live instances' capacities, so
// the pass holders of a SKU never outnumber what the instances can place
// at once, and a pass holder is not refused by the edge's in-flight cap
// (docs/design/fair-sale.md). Zero publishes nothing (a reader's store).
func (s *Store) WithCapacity(capacity int64, ttl time.Duration) *Store {
	c := *s
	c.capacity, c.capacityTTL = max(capacity, 0), ttl
	if ttl <= 0 {
		c.capacityTTL = DefaultCapacityTTL
	}
	return &c
}

func checkSKU(sku string) error {
	if !flashsale.ValidID(sku, flashsale.MaxIDLength) {
		return flashsale.Errorf(flashsale.Invalid, "invalid sku %q", sku)
	}
	return nil
}

// noSale is the answer for a SKU without a sale.
func noSale(sku string) error {
	return flashsale.Errorf(flashsale.NoSale, "sku %s has no queued sale", sku)
}

// Prepare creates sku's sale in PREQUEUE for the sale id (the workflow's
// run id) and returns the SHA-256 of its seed, hex: the commitment
// published before anyone enters. Repeating it for the same id returns the
// same hash; another id replaces an earlier sale of the SKU and its queue.
func (s *Store) Prepare(ctx context.Context, sku, saleID string, opensAt time.Time, passTTL time.Duration) (string, error) {
	if err := checkSKU(sku); err != nil {
		return "", err
	}
	seed := make([]byte, 32)
	_, _ = rand.Read(seed) // never fails (crypto/rand)
	hexSeed := hex.EncodeToString(seed)
	hash, err := prepareScript.Run(ctx, s.rdb, keys(sku), saleID, opensAt.UnixMilli(), passTTL.Milliseconds(),
		hexSeed, SeedHash(hexSeed)).Text()
	if err != nil {
		return "", fmt.Errorf("prepare sale of %s: %w", sku, err)
	}
	return hash, nil
}

// SeedHash is the commitment to a seed (hex): the hex SHA-256 of its hex
// form.
func SeedHash(seed string) string {
	h := sha256.Sum256([]byte(seed))
	return hex.EncodeToString(h[:])
}

// Open freezes the pre-queue, ranks the entrants by the seed and opens the
// sale, revealing the seed. It is idempotent: a retry after a crash reads
// the same frozen entrants and the same seed, so it writes the same ranks;
// on a sale already open it changes nothing.
func (s *Store) Open(ctx context.Context, sku string) (flashsale.OpenedSale, error) {
	if err := checkSKU(sku); err != nil {
		return flashsale.OpenedSale{}, err
	}
	ks := keys(sku)
	res, err := freezeScript.Run(ctx, s.rdb, ks).Slice()
	if err != nil {
		return flashsale.OpenedSale{}, fmt.Errorf("freeze queue of %s: %w", sku, err)
	}
	state, entrants := State(res[0].(string)), res[1].(int64)
	if state == "" {
		return flashsale.OpenedSale{}, noSale(sku)
	}
	if state == Shuffling {
		users, err := s.rdb.HKeys(ctx, ks[kEntered]).Result()
		if err != nil {
			return flashsale.OpenedSale{}, fmt.Errorf("read entrants of %s: %w", sku, err)
		}
		seed, err := s.rdb.Get(ctx, ks[kSeed]).Result()
		if err != nil {
			return flashsale.OpenedSale{}, fmt.Errorf("read seed of %s: %w", sku, err)
		}
		if err := s.writeRanks(ctx, ks[kRank], Ranks(seed, users)); err != nil {
			return flashsale.OpenedSale{}, fmt.Errorf("write ranks of %s: %w", sku, err)
		}
		st, err := revealScript.Run(ctx, s.rdb, ks).Text()
		if err != nil {
			return flashsale.OpenedSale{}, fmt.Errorf("open sale of %s: %w", sku, err)
		}
		state = State(st)
	}
	seed, err := s.rdb.HGet(ctx, ks[kSale], "seed").Result()
	if err != nil {
		return flashsale.OpenedSale{}, fmt.Errorf("read revealed seed of %s: %w", sku, err)
	}
	return flashsale.OpenedSale{Entrants: entrants, Seed: seed, State: state}, nil
}

// writeRanks writes the entrants' ranks in batches, in one pipeline. A
// retry writes the same scores again.
func (s *Store) writeRanks(ctx context.Context, key string, ranked []string) error {
	const batch = 1000
	pipe := s.rdb.Pipeline()
	for i := 0; i < len(ranked); i += batch {
		members := make([]redis.Z, 0, batch)
		for j, u := range ranked[i:min(i+batch, len(ranked))] {
			members = append(members, redis.Z{Score: float64(i + j + 1), Member: u})
		}
		pipe.ZAdd(ctx, key, members...)
	}
	if len(ranked) == 0 {
		return nil
	}
	_, err := pipe.Exec(ctx)
	return err
}

// Ranks is the shuffle: the users in rank order (the first is rank 1),
// sorted by the hex SHA-256 of seed + ":" + user id. Anyone holding the
// revealed seed and the entrants' ids can run it.
func Ranks(seed string, users []string) []string {
	type keyed struct{ key, user string }
	ks := make([]keyed, len(users))
	for i, u := range users {
		h := sha256.Sum256([]byte(seed + ":" + u))
		ks[i] = keyed{hex.EncodeToString(h[:]), u}
	}
	slices.SortFunc(ks, func(a, b keyed) int {
		if a.key != b.key {
			if a.key < b.key {
				return -1
			}
			return 1
		}
		if a.user < b.user {
			return -1
		}
		if a.user > b.user {
			return 1
		}
		return 0
	})
	out := make([]string, len(ks))
	for i, k := range ks {
		out[i] = k.user
	}
	return out
}

// SetState moves sku's sale to state `to` if it is in one of from (or
// already in `to`), and returns the state it is in after the call; a move
// the state does not allow is a SaleStateConflict error.
func (s *Store) SetState(ctx context.Context, sku string, to State, from ...State) (State, error) {
	if err := checkSKU(sku); err != nil {
		return "", err
	}
	args := []any{string(to)}
	for _, f := range from {
		args = append(args, string(f))
	}
	st, err := stateScript.Run(ctx, s.rdb, keys(sku), args...).Text()
	switch {
	case err != nil:
		return "", fmt.Errorf("set sale of %s %s: %w", sku, to, err)
	case st == "":
		return "", noSale(sku)
	case State(st) != to:
		return State(st), flashsale.Errorf(flashsale.SaleStateConflict, "the sale of %s is %s", sku, st)
	}
	return State(st), nil
}

// StateOf is sku's sale's state, "" for a SKU without a sale.
func (s *Store) StateOf(ctx context.Context, sku string) (_ State, err error) {
	defer outage(&err)
	st, err := s.rdb.HGet(ctx, saleKey(sku), "state").Result()
	if errors.Is(err, redis.Nil) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read sale state of %s: %w", sku, err)
	}
	return State(st), nil
}

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
// sale, SaleClosed once it is over.
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
	p, err := s.look(ctx, sku, userID)
	switch {
	case err != nil:
		return Place{}, err
	case p.Ticket.Ticket == 0 && p.Rank == 0:
		return Place{}, flashsale.Errorf(flashsale.NotInQueue, "%s is not in the queue of %s", userID, sku)
	}
	return p, nil
}

// Counter is a sale's serving counter as one look left it: what decides
// whether a buyer waiting for their pass (Waits) has something new to read.
type Counter struct {
	State   State
	Serving int64
	// SoldOut: the sale is open and its buckets are empty (Place.SoldOut).
	SoldOut bool
}

// SoldOutAt is p as the counter c that found the SKU sold out left it:
// nothing left for the buyer to wait for.
func (p Place) SoldOutAt(c Counter) Place {
	p.State, p.Serving, p.SoldOut, p.ETA = c.State, c.Serving, true, nil
	p.Ahead = 0
	if p.Rank > p.Serving {
		p.Ahead = p.Rank - p.Serving - 1
	}
	return p
}

// Serve moves sku's serving counter on, like any look at the queue
// (PlaceOf) but on nobody's behalf, and answers where it stands. NoSale
// for a SKU without a sale.
func (s *Store) Serve(ctx context.Context, sku string) (_ Counter, err error) {
	defer outage(&err)
	p, err := s.look(ctx, sku, "")
	if err != nil {
		return Counter{}, err
	}
	return Counter{State: p.State, Serving: p.Serving, SoldOut: p.SoldOut}, nil
}

// look runs sale_me.lua for userID ("" looks on nobody's behalf: no
// ticket, no rank) after reading the units left. NoSale for a SKU without
// a sale.
func (s *Store) look(ctx context.Context, sku, userID string) (Place, error) {
	if err := checkSKU(sku); err != nil {
		return Place{}, err
	}
	units, err := s.stock(ctx, sku)
	if err != nil && flashsale.ErrorCode(err) != flashsale.UnknownSKU {
		return Place{}, fmt.Errorf("units of %s: %w", sku, err)
	}
	res, err := meScript.Run(ctx, s.rdb, keys(sku), userID, units, s.instance, s.capacity,
		s.capacityTTL.Milliseconds()).Slice()
	if err != nil {
		return Place{}, fmt.Errorf("queue place of %s in %s: %w", userID, sku, err)
	}
	p := Place{
		Ticket: Ticket{SKU: sku, UserID: userID, State: State(res[0].(string)), Ticket: res[1].(int64), Rank: res[2].(int64),
			SeedHash: res[7].(string)},
		Serving: res[3].(int64), Queued: res[4].(int64), Spent: res[6].(int64) == 1,
		Seed: res[8].(string), Outstanding: res[9].(int64), Capacity: res[14].(int64),
	}
	now, opensAt, first, firstAt := res[10].(int64), res[11].(int64), res[12].(int64), res[13].(int64)
	if ms := res[5].(int64); ms > 0 {
		p.PassExpiry = time.UnixMilli(ms)
	}
	if p.State == "" {
		return Place{}, noSale(sku)
	}
	if p.Rank > p.Serving {
		p.Ahead = p.Rank - p.Serving - 1
	}
	p.SoldOut = p.State == Open && units == 0 && !p.Spent
	p.ETA = eta(p, now, opensAt, first, firstAt)
	return p, nil
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

// Board is a sale's public figures, read without moving anything: the
// live sale page's queue and the final report's fairness figures.
type Board struct {
	State State `json:"state"`
	// Entrants is how many buyers the shuffle ranked; Queued is everyone
	// in the queue (before the open: everyone entered so far).
	Entrants int64 `json:"entrants"`
	Queued   int64 `json:"queued"`
	// Serving is the serving counter: the highest rank a pass was issued
	// to, so also how many passes were issued.
	Serving int64 `json:"serving"`
	// Outstanding is how many passes are issued and neither spent nor
	// expired; Spent how many bought their unit.
	Outstanding int64     `json:"outstanding"`
	Spent       int64     `json:"spent"`
	OpensAt     time.Time `json:"opens_at"`
	// Capacity is the live placement capacity (the sum the serving counter
	// bounds the passes outstanding by).
	Capacity int64 `json:"capacity"`
}

// BoardOf reads sku's Board; NoSale for a SKU without a sale.
func (s *Store) BoardOf(ctx context.Context, sku string) (_ Board, err error) {
	defer outage(&err)
	if err := checkSKU(sku); err != nil {
		return Board{}, err
	}
	res, err := boardScript.Run(ctx, s.rdb, keys(sku)).Slice()
	if err != nil {
		return Board{}, fmt.Errorf("sale board of %s: %w", sku, err)
	}
	b := Board{State: State(res[0].(string)), Entrants: res[1].(int64), Queued: res[2].(int64), Serving: res[3].(int64),
		Outstanding: res[4].(int64), Spent: res[5].(int64), OpensAt: time.UnixMilli(res[6].(int64)).UTC(),
		Capacity: res[7].(int64)}
	if b.State == "" {
		return Board{}, noSale(sku)
	}
	return b, nil
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
		return 0, "", fmt.Errorf("rank of %s in %s: %w", userID, sku, err)
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
	return 0, st, flashsale.Errorf(flashsale.NotInQueue, "%s is not in the queue of %s", userID, sku)
}

// Spend spends the pass of rank (its signed expiry) on orderID. The same
// order again is no error (a retried buy); another order is PassUsed; a
// pass not outstanding is PassExpired; a sale not open is SaleNotOpen,
// SalePaused or SaleClosed.
func (s *Store) Spend(ctx context.Context, sku string, rank int64, expiry time.Time, orderID string) (err error) {
	defer outage(&err)
	res, err := spendScript.Run(ctx, s.rdb, keys(sku), strconv.FormatInt(rank, 10), expiry.UnixMilli(), orderID).Text()
	if err != nil {
		return fmt.Errorf("spend pass %d of %s: %w", rank, sku, err)
	}
	switch res {
	case "OK", "REPEAT":
		return nil
	case "USED":
		return flashsale.Errorf(flashsale.PassUsed, "this pass has bought its unit already")
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
	outcome, units := "bought", int64(0)
	if !bought {
		outcome = "nothing"
		if units, err = s.stock(ctx, sku); err != nil && flashsale.ErrorCode(err) != flashsale.UnknownSKU {
			return fmt.Errorf("units of %s: %w", sku, err)
		}
	}
	if err := settleScript.Run(ctx, s.rdb, keys(sku), strconv.FormatInt(rank, 10), expiry.UnixMilli(), orderID, units, outcome).Err(); err != nil {
		return fmt.Errorf("settle pass %d of %s (%s): %w", rank, sku, outcome, err)
	}
	return nil
}

// StateError is the refusal of a buy while the sale is not OPEN.
func StateError(sku string, st State) error {
	switch st {
	case "":
		return noSale(sku)
	case Paused:
		return flashsale.Errorf(flashsale.SalePaused, "the sale of %s is paused", sku)
	case Closed:
		return flashsale.Errorf(flashsale.SaleClosed, "the sale of %s is closed", sku)
	}
	return flashsale.Errorf(flashsale.SaleNotOpen, "the sale of %s is not open yet", sku)
}
