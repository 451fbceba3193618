package httpapi

import (
	"context"
	"embed"
	"html/template"
	"net/http"
	"time"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/internal/sale"
)

// The live sale page: the operators' "big screen" of one SKU (GET
// /sale/{sku}), a static page that polls GET /api/v1/skus/{sku}/live once
// a second. Both are public, so the snapshot holds nothing about a buyer or
// an order id, and both are cheap: a SKU's snapshot is read at most once a
// second whatever the number of viewers (snapshots.go).

//go:embed web
var webFS embed.FS

var salePageTmpl = template.Must(template.ParseFS(webFS, "web/sale.html"))

// saleAssets are the files under /static/sale/; nothing else is served.
var saleAssets = map[string]bool{"sale.js": true, "sale.css": true}

const (
	// liveMaxCached caps the SKUs whose snapshot is kept.
	liveMaxCached = 64
	// liveRecentOrders is how many of the latest orders the page lists.
	liveRecentOrders = 12
)

// buyRoute is the buy endpoint's mux pattern, the route label its answers
// are counted under.
const buyRoute = "POST /api/v1/orders"

// saleBoard serves the page, its assets and the live JSON.
type saleBoard struct {
	s         *Server
	snapshots *snapshots[*saleLive]
}

func newSaleBoard(s *Server) *saleBoard {
	b := &saleBoard{s: s}
	b.snapshots = newSnapshots(liveMaxCached, errLiveBusy, b.read)
	return b
}

// saleLive is GET /api/v1/skus/{sku}/live. MySQL's numbers are the truth
// (total = db_available + frozen + sold); Redis's are what buyers are being
// sold from right now. Traffic is the SKU's buy answers over every API
// instance.
type saleLive struct {
	SKU         string    `json:"sku_id"`
	At          time.Time `json:"at"`
	Total       int64     `json:"total"`
	DBAvailable int64     `json:"db_available"`
	Frozen      int64     `json:"frozen"`
	Sold        int64     `json:"sold"`
	Price       int64     `json:"price"`
	// RedisAvailable and BucketStock are null while Redis is unreachable
	// (RedisDown), or before the SKU was preheated.
	RedisAvailable *int64  `json:"redis_available"`
	BucketStock    []int64 `json:"bucket_stock"`
	RedisDown      bool    `json:"redis_down"`
	SoldOut        bool    `json:"sold_out"`
	Drift          int64   `json:"drift"`
	Waitlist       *int64  `json:"waitlist"`
	// Queue is a fair sale's queue (its length, the serving counter, the
	// passes out), null for a SKU without one.
	Queue *sale.Board `json:"queue"`
	// Orders counts the current sale's orders by status (every status
	// present, zero included).
	Orders       map[string]int64 `json:"orders"`
	RecentOrders []liveOrder      `json:"recent_orders"`
	Traffic      liveTraffic      `json:"traffic"`
}

// liveOrder is one recent order, anonymous.
type liveOrder struct {
	Status    string    `json:"status"`
	Quantity  int64     `json:"quantity"`
	Amount    int64     `json:"amount"`
	UpdatedAt time.Time `json:"updated_at"`
}

// liveTraffic is the SKU's buy answers over every API instance, as the
// instances flushed them to Redis (at most a second behind).
type liveTraffic struct {
	// RequestsPerSecond is the SKU's buy requests answered per second over
	// the last 5 complete seconds (null while Redis does not answer).
	RequestsPerSecond *float64 `json:"requests_per_second"`
	// Answers counts the SKU's buy answers by HTTP status, every instance's
	// since the sale's first answer (kept a week after its last).
	Answers map[string]int64 `json:"answers"`
	// P99 of buy answers over the last 10 s, all of them and by what
	// decided them (null when there were none), from the same histogram
	// as flashsale_buy_duration_seconds (so bucket-interpolated).
	P99Ms         *float64 `json:"p99_ms"`
	P99AdmittedMs *float64 `json:"p99_admitted_ms"`
	P99ShedMs     *float64 `json:"p99_shed_ms"`
}

// page serves the HTML. An unknown SKU is 404 like its JSON; any other
// read failure still serves the page, which shows the error and recovers.
func (b *saleBoard) page(w http.ResponseWriter, r *http.Request) {
	sku, err := skuParam(r)
	if err != nil {
		b.s.writeError(w, r, err)
		return
	}
	if _, err := b.snapshot(r.Context(), sku); isUnknownSKU(err) {
		b.s.writeError(w, r, err)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	// Only our own script and style run; the page never embeds anything.
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; base-uri 'none'; frame-ancestors 'none'")
	h.Set("Referrer-Policy", "no-referrer")
	if err := salePageTmpl.Execute(w, struct{ SKU string }{sku}); err != nil {
		b.s.log.DebugContext(r.Context(), "write sale page", "error", err)
	}
}

// asset serves the page's script and style.
func (b *saleBoard) asset(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("file")
	if !saleAssets[name] {
		b.s.writeError(w, r, &flashsale.Error{Code: NotFound})
		return
	}
	w.Header().Set("Cache-Control", "public, max-age=300")
	http.ServeFileFS(w, r, webFS, "web/"+name)
}

// live serves the JSON snapshot.
func (b *saleBoard) live(w http.ResponseWriter, r *http.Request) {
	sku, err := skuParam(r)
	if err != nil {
		b.s.writeError(w, r, err)
		return
	}
	snap, err := b.snapshot(r.Context(), sku)
	if err != nil {
		b.s.writeError(w, r, err)
		return
	}
	// A cache in front (a CDN, a proxy) may share it for as long as we do.
	w.Header().Set("Cache-Control", "public, max-age=1")
	b.s.writeJSON(w, r, http.StatusOK, snap)
}

// errLiveBusy: every read slot is taken and the caller gave up waiting.
var errLiveBusy = refuse(flashsale.Unavailable, "sale page busy, retry in a second")

// snapshot returns sku's snapshot no older than a second.
func (b *saleBoard) snapshot(ctx context.Context, sku string) (*saleLive, error) {
	return b.snapshots.get(ctx, sku)
}

// read builds a snapshot: one MySQL snapshot (row, order counts, recent
// orders), one Redis stock read, the waitlist's length, a fair sale's
// queue (one read-only script) and one pipeline of the SKU's traffic
// counts.
func (b *saleBoard) read(ctx context.Context, sku string) (*saleLive, error) {
	view, err := b.s.deps.Store.SaleView(ctx, sku, liveRecentOrders)
	if err != nil {
		return nil, err
	}
	inv := view.Inventory
	out := &saleLive{
		SKU: sku, At: time.Now().UTC(), Total: inv.Total, DBAvailable: inv.Available, Frozen: inv.Frozen,
		Sold: inv.Sold, Price: inv.Price, Orders: map[string]int64{}, RecentOrders: []liveOrder{},
	}
	for _, st := range []flashsale.Status{flashsale.StatusPendingPayment, flashsale.StatusPaid, flashsale.StatusExpired, flashsale.StatusCancelled} {
		out.Orders[string(st)] = view.Orders[st]
	}
	for _, o := range view.Recent {
		out.RecentOrders = append(out.RecentOrders, liveOrder{Status: string(o.Status), Quantity: o.Quantity, Amount: o.Amount, UpdatedAt: o.UpdatedAt.UTC()})
	}
	out.SoldOut = inv.Available == 0
	// While Redis's breaker is open the page must not add to the outage;
	// MySQL alone says whether units remain.
	if !b.s.deps.Guard.Up() {
		out.RedisDown = true
	} else {
		st, err := b.s.deps.Stock.Stock(ctx, sku)
		switch {
		case isUnknownSKU(err):
			// Defined but never preheated: nothing on sale from Redis.
			out.SoldOut = true
		case err != nil:
			b.s.log.WarnContext(ctx, "sale page: redis stock", "sku", sku, "error", err)
			out.RedisDown = true
		default:
			avail := st.Available
			out.RedisAvailable, out.BucketStock, out.Drift = &avail, st.PerBucket, st.Drift
			out.SoldOut = st.Exhausted()
		}
		if n, err := b.s.deps.Stock.WaitlistLength(ctx, sku); err == nil {
			out.Waitlist = &n
		}
		if q, err := b.s.sales.Store().BoardOf(ctx, sku); err == nil {
			out.Queue = &q
		}
	}
	out.Traffic = liveTraffic{Answers: map[string]int64{}}
	if !out.RedisDown {
		if out.Traffic, err = b.trafficNow(ctx, sku, time.Now()); err != nil {
			b.s.log.WarnContext(ctx, "sale page: traffic", "sku", sku, "error", err)
		}
	}
	return out, nil
}
