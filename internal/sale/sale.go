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
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/internal/inventory"
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
	closesScript  = script("sale_closes.lua")
	holdScript    = script("sale_hold.lua")
)

// Stock reads a SKU's units left in Redis (inventory.Store's AvailableTo
// with no buyer, its Units).
type Stock func(ctx context.Context, sku string) (int64, error)

// Seeds keeps each sale's seed out of Redis until the open (MySQL's
// sale_seeds, orderdb.Store): Redis holds only its commitment, so whoever
// can read Redis cannot know the ranks before the open.
type Seeds interface {
	// KeepSaleSeed stores seed as saleID's unless it has one, and returns
	// the one stored.
	KeepSaleSeed(ctx context.Context, saleID, sku, seed string) (string, error)
	// SaleSeed is saleID's seed, "" when none was kept.
	SaleSeed(ctx context.Context, saleID string) (string, error)
}

// Store holds the sales of every SKU in Redis.
type Store struct {
	rdb   redis.UniversalClient
	stock Stock
	// seeds is needed by Prepare and Open only (WithSeeds).
	seeds Seeds
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

// WithSeeds returns a copy of s that keeps the seeds of the sales it
// prepares in seeds, as the worker's store does (Prepare, Open).
func (s *Store) WithSeeds(seeds Seeds) *Store {
	c := *s
	c.seeds = seeds
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

// modeOf is sku's sale's state ("" for no sale) and whether the SKU is
// defined queued (inventory.QueuedKey, in the same slot): one round trip,
// the buy's only cost for a SKU without a sale.
func (s *Store) modeOf(ctx context.Context, sku string) (_ State, queued bool, err error) {
	defer outage(&err)
	var state *redis.StringCmd
	var flag *redis.IntCmd
	if _, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		state = p.HGet(ctx, saleKey(sku), "state")
		flag = p.Exists(ctx, inventory.QueuedKey(sku))
		return nil
	}); err != nil && !errors.Is(err, redis.Nil) {
		return "", false, fmt.Errorf("read sale state of %s: %w", sku, err)
	}
	return State(state.Val()), flag.Val() == 1, nil
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
