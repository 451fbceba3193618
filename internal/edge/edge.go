// Package edge is the load-shedding gate in front of the order workflow.
//
// Every request that reaches Temporal costs a workflow, however quickly it
// says "sold out", so the gate answers as many buy requests as it can
// before that, cheapest first: an in-process sold-out cache (cache.go,
// kept fresh by the Pub/Sub listener in listener.go), a full admission
// window (BUSY), the per-user rate limit (first, for a request of several
// items, so made-up SKU names beside a sold-out one are not free), the
// Redis sold-out flag, and a
// window of admitted units per SKU sized by what Redis still holds
// (admission.go, window.go), so the workflows started grow with the stock,
// not with the requests. Before all of them a door may ask QuickAnswer
// (quick.go) whether a one-line buy of a SKU cached as sold out can be
// answered before it is even authenticated. An admitted request holds a Ticket (ticket.go)
// until its placement answers. While Redis is down the gate degrades to
// MySQL's available units behind a smaller window (degraded.go). A fair
// sale's queue requests take a slot of the instance's own before they ask
// Redis (queue.go). Its counters are in stats.go.
//
// Redis's Reserve and MySQL stay the judges of every unit; the gate only
// decides who may ask. The layers, and why a wrong sold-out hint is always
// short-lived, are described in docs/design/edge.md.
package edge

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/flashsale/flashsale"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/singleflight"

	"github.com/flashsale/flashsale/internal/inventory"
	"github.com/flashsale/flashsale/internal/redisguard"
)

// Defaults for Options fields left zero.
const (
	// DefaultMaxInFlight bounds the units of one SKU on their way through
	// Temporal from one instance. Update-with-Start takes ~35 ms on an idle
	// dev server, so 16 in flight is a few hundred orders a second, more
	// than the dev server's ~50 workflows/s; a larger window only queues
	// inside Temporal and lengthens every buyer's wait.
	DefaultMaxInFlight = 16
	// DefaultBuyRate is buy requests per second per user, across instances.
	DefaultBuyRate = 5
	// DefaultLocalTTL is the in-process sold-out cache's safety net for a
	// lost Pub/Sub message: short, because a wrong entry turns buyers away.
	DefaultLocalTTL = time.Second
	// DefaultBusyRetryAfter is the Retry-After given with a Busy answer.
	// Retry-After has whole seconds; one second is the least it can say.
	DefaultBusyRetryAfter = time.Second
	// DefaultPlacedTTL is how long an order id is remembered as placed, so a
	// repeat skips shedding and gets its first answer: as long as the
	// inventory's markers of the order live.
	DefaultPlacedTTL = inventory.DefaultHeldTTL
	// DefaultDegradedMaxInFlight: without Redis every admitted order
	// takes MySQL's row lock for its SKU; a few at a time keep it busy
	// without a queue of held connections behind it.
	DefaultDegradedMaxInFlight = 8
)

// Options tune the gate. Zero values take the defaults above.
type Options struct {
	MaxInFlight    int64
	BuyRate        int
	LocalTTL       time.Duration
	BusyRetryAfter time.Duration
	PlacedTTL      time.Duration
	Logger         *slog.Logger

	// Guard tells whether Redis is reachable; nil means always try it.
	Guard *redisguard.Guard
	// DBAvailable reads a SKU's available units from MySQL, for the
	// degraded path; it must return an UnknownSKU *flashsale.Error
	// (wrapped or not) for a SKU MySQL does not know. Nil disables
	// degradation: with Redis down the gate fails closed (Unavailable).
	DBAvailable func(ctx context.Context, sku string) (int64, error)
	// DegradedMaxInFlight bounds the units of one SKU on their way from
	// this instance while Redis is down.
	DegradedMaxInFlight int64
	// Placements is this instance's limit on new orders in flight into
	// Temporal; nil means none. An admitted request holds one of its
	// permits (Ticket.Placed gives it back), taken before the order id is
	// remembered as placed: a request refused by the limit leaves no
	// marker, so its retry is a new placement that asks the limit again,
	// not a repeat that skips every layer.
	Placements *PlacementLimit
	// QueueInFlight bounds the queue's requests of this instance that ask
	// Redis at once (AdmitQueue); QueuePatience is how long one waits for
	// a slot before it is BUSY.
	QueueInFlight int
	QueuePatience time.Duration
}

func (o Options) withDefaults() Options {
	if o.MaxInFlight <= 0 {
		o.MaxInFlight = DefaultMaxInFlight
	}
	if o.BuyRate <= 0 {
		o.BuyRate = DefaultBuyRate
	}
	if o.LocalTTL <= 0 {
		o.LocalTTL = DefaultLocalTTL
	}
	if o.BusyRetryAfter <= 0 {
		o.BusyRetryAfter = DefaultBusyRetryAfter
	}
	if o.PlacedTTL <= 0 {
		o.PlacedTTL = DefaultPlacedTTL
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.DegradedMaxInFlight <= 0 {
		o.DegradedMaxInFlight = DefaultDegradedMaxInFlight
	}
	if o.QueueInFlight <= 0 {
		o.QueueInFlight = DefaultQueueInFlight
	}
	if o.QueuePatience <= 0 {
		o.QueuePatience = DefaultQueuePatience
	}
	return o
}

// Request is a buy request that has passed input validation.
type Request struct {
	OrderID string
	// ClientOrderID is true when the buyer chose the order id, so the
	// request may repeat an order already placed.
	ClientOrderID bool
	UserID        string
	Items         []flashsale.Item
	// Pass is true when the buyer holds a live pass of a queued SKU (the
	// caller read it outstanding: sale.Claim.Live). Such a request is not
	// answered BUSY by the per-SKU window's MaxInFlight nor by the
	// placement limit: the sale's serving counter is that SKU's admission
	// control, and it keeps the passes outstanding below the capacity the
	// API instances publish (each its SALE_PASSES_PER_INSTANCE, summed), so
	// the holders never ask for more than the instances took on. Everything else
	// applies as for any buy: the rate limit, the buyer's unit limit, the
	// stock (a request never admitted past the units it read), the placed
	// marker; Reserve and MySQL stay the judges of every unit. A forged
	// or foreign pass never gets here (the signature is checked first),
	// and a spent one is refused by the spend before any workflow starts.
	Pass bool
}

// Gate is the load-shedding gate. It is safe for concurrent use; Run must be
// running for the in-process cache to hear about stock changes.
type Gate struct {
	rdb     redis.UniversalClient
	stock   *inventory.Store
	limiter *redis_rate.Limiter
	opts    Options

	cache    *soldOutCache
	inflight *inflight
	// degraded is the admission window while Redis is down, and dbReads
	// collapses concurrent MySQL reads of one SKU into one.
	degraded *inflight
	dbReads  singleflight.Group
	// placedReads collapses concurrent reads of one SKU's placed ids.
	placedReads singleflight.Group
	stats       counters
	// subscribed is true while Run holds a live stock-change subscription.
	subscribed atomic.Bool
	// queue holds the slots of the queue's requests (AdmitQueue).
	queue queueSlots
}

// New returns a gate on rdb (for the rate limit, the placed-order markers
// and Pub/Sub) and stock (the sold-out flag and bucket sums).
func New(rdb redis.UniversalClient, stock *inventory.Store, opts Options) *Gate {
	opts = opts.withDefaults()
	return &Gate{
		rdb:      rdb,
		stock:    stock,
		limiter:  redis_rate.NewLimiter(rdb),
		opts:     opts,
		cache:    newSoldOutCache(opts.LocalTTL),
		inflight: newInflight(),
		degraded: newInflight(),
		queue:    make(queueSlots, opts.QueueInFlight),
	}
}
