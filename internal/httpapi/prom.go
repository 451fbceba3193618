package httpapi

import (
	"cmp"
	"context"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/internal/edge"
	"github.com/flashsale/flashsale/internal/inventory"
	fsmetrics "github.com/flashsale/flashsale/internal/metrics"
	"github.com/flashsale/flashsale/workflows"
)

// promMetrics are the API's Prometheus instruments. They are always
// updated; RegisterMetrics puts them on a registry, so tests running
// several servers in one process never collide on a global one.
type promMetrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	// buy is a buy request's whole answer time by what decided it: the
	// edge (shed) or the order workflow (admitted). The two differ by
	// orders of magnitude, so one histogram would hide both.
	buy        *prometheus.HistogramVec
	placements *prometheus.CounterVec
	started    prometheus.Counter
}

func newPromMetrics() promMetrics {
	ns := fsmetrics.Namespace
	return promMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: ns, Name: "http_requests_total",
			Help: "HTTP answers by route pattern and status code (499: the client hung up first).",
		}, []string{"route", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: ns, Name: "http_request_duration_seconds",
			Help:    "HTTP request duration by route pattern.",
			Buckets: fsmetrics.LatencyBuckets,
		}, []string{"route"}),
		buy: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: ns, Name: "buy_duration_seconds",
			Help:    "Buy request answer time: outcome=shed when the edge answered, admitted when the order workflow did.",
			Buckets: fsmetrics.LatencyBuckets,
		}, []string{"outcome"}),
		placements: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: ns, Name: "order_placements_total",
			Help: "Admitted buy requests by the order workflow's answer: reserved, sold_out, limit_exceeded, rejected (other reasons), error.",
		}, []string{"result"}),
		started: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: ns, Name: "order_workflows_started_total",
			Help: "Update-with-Start calls for new orders (not repeats of placed ones): an upper bound on order workflows started.",
		}),
	}
}

// routeLabel is the mux pattern that served r ("POST /api/v1/orders"), so
// ids in paths never become label values. Requests no route matched share
// one label.
func routeLabel(r *http.Request) string {
	if r.Pattern == "" || r.Pattern == "/" {
		return "unmatched"
	}
	return r.Pattern
}

func (m *promMetrics) observeRequest(r *http.Request, status int, took time.Duration) {
	route := routeLabel(r)
	m.requests.WithLabelValues(route, strconv.Itoa(status)).Inc()
	m.duration.WithLabelValues(route).Observe(took.Seconds())
}

// placementResult labels the order workflow's answer to an admitted request.
func placementResult(res workflows.Reservation, err error) string {
	switch {
	case err != nil:
		return "error"
	case res.Status != flashsale.StatusRejected:
		return "reserved"
	case res.Reason == flashsale.SoldOut:
		return "sold_out"
	case res.Reason == flashsale.LimitExceeded:
		return "limit_exceeded"
	default:
		return "rejected"
	}
}

// RegisterMetrics puts the API's metrics on reg: HTTP answers and
// latencies, the edge's decisions, and per-SKU stock for the SKUs this
// instance was asked for recently (read at scrape time, see skuCollector).
func (s *Server) RegisterMetrics(reg prometheus.Registerer) error {
	for _, c := range append([]prometheus.Collector{
		s.prom.requests, s.prom.duration, s.prom.buy, s.prom.placements, s.prom.started,
		&edgeCollector{gate: s.gate},
		newSKUCollector(s),
	}, placementCollectors(s.placements)...) {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

var (
	edgeDecisionsDesc = prometheus.NewDesc("flashsale_edge_decisions_total",
		"Buy requests by the edge's decision: admitted, duplicate (a placed order id, sent on for its first answer), "+
			"sold_out_local (in-process cache), sold_out_redis_flag, sold_out_stock (no units left in Redis, or MySQL while degraded), "+
			"busy, rate_limited, unknown_sku, id_conflict, unavailable (Redis or MySQL did not answer).",
		[]string{"decision"}, nil)
	edgeRequestsDesc = prometheus.NewDesc("flashsale_edge_requests_total",
		"Buy requests that reached the edge.", nil, nil)
	edgeDegradedDesc = prometheus.NewDesc("flashsale_edge_degraded_requests_total",
		"Buy requests decided without Redis (degraded: MySQL's stock decided).", nil, nil)
	edgeInFlightDesc = prometheus.NewDesc("flashsale_edge_in_flight_units",
		"Units admitted by this instance and still on their way through Temporal (all SKUs).", nil, nil)
	edgeSubscribedDesc = prometheus.NewDesc("flashsale_edge_stock_changes_subscribed",
		"1 while the edge's stock-change subscription (Redis Pub/Sub) is live.", nil, nil)
	edgeStockChangesDesc = prometheus.NewDesc("flashsale_edge_stock_changes_heard_total",
		"Stock-change messages the edge heard.", nil, nil)
	edgeLocalSoldOutDesc = prometheus.NewDesc("flashsale_edge_local_sold_out_skus",
		"SKUs this instance's in-process cache holds as sold out.", nil, nil)
)

// edgeCollector reads the gate's counters at scrape time: the gate keeps
// its atomics, and the metrics cost nothing between scrapes.
type edgeCollector struct{ gate *edge.Gate }

func (c *edgeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{edgeDecisionsDesc, edgeRequestsDesc, edgeDegradedDesc, edgeInFlightDesc,
		edgeSubscribedDesc, edgeStockChangesDesc, edgeLocalSoldOutDesc} {
		ch <- d
	}
}

func (c *edgeCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.gate.Stats()
	for decision, n := range map[string]int64{
		"admitted": st.Admitted, "duplicate": st.Duplicates,
		"sold_out_local": st.SoldOutLocal, "sold_out_redis_flag": st.SoldOutRedis, "sold_out_stock": st.SoldOutStock,
		"busy": st.Busy, "rate_limited": st.RateLimited, "unknown_sku": st.UnknownSKU,
		"id_conflict": st.IDConflicts, "unavailable": st.Unavailable,
	} {
		ch <- prometheus.MustNewConstMetric(edgeDecisionsDesc, prometheus.CounterValue, float64(n), decision)
	}
	ch <- prometheus.MustNewConstMetric(edgeRequestsDesc, prometheus.CounterValue, float64(st.Requests))
	ch <- prometheus.MustNewConstMetric(edgeDegradedDesc, prometheus.CounterValue, float64(st.Degraded))
	ch <- prometheus.MustNewConstMetric(edgeInFlightDesc, prometheus.GaugeValue, float64(st.InFlightUnits))
	ch <- prometheus.MustNewConstMetric(edgeSubscribedDesc, prometheus.GaugeValue, boolValue(st.Subscribed))
	ch <- prometheus.MustNewConstMetric(edgeStockChangesDesc, prometheus.CounterValue, float64(st.StockChanges))
	ch <- prometheus.MustNewConstMetric(edgeLocalSoldOutDesc, prometheus.GaugeValue, float64(st.LocalSoldOutSKUs))
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// Bounds of the per-SKU gauges, so a scrape never costs Redis or MySQL
// more than a few reads, whatever buyers send.
const (
	// maxRecentSKUs caps the SKUs remembered and exported: the most
	// recently noted.
	maxRecentSKUs = 16
	// recentSKUTTL: a SKU not asked for this long drops out.
	recentSKUTTL = 15 * time.Minute
	// maxBucketSeries: a SKU with more buckets exports only its sum.
	maxBucketSeries = 64
	// skuScrapeTimeout bounds all the reads of one scrape together.
	skuScrapeTimeout = time.Second
	// skuCacheFor: scrapes closer together than this (several Prometheus
	// servers, a dashboard refreshing) share one read.
	skuCacheFor = time.Second
)

// recentSKUs remembers the SKUs put on sale through this instance or found
// by the edge, for the per-SKU gauges: at most maxRecentSKUs, the most
// recently noted, capped on insert (a new SKU pushes the oldest out), so
// nothing a request sends can grow it. Noting runs on every buy request,
// the shed ones too, so a SKU already there costs one atomic store and no
// lock; only a new SKU takes the lock.
type recentSKUs struct {
	mu   sync.Mutex // held to add or remove entries
	n    int        // entries in seen
	seen sync.Map   // sku -> *atomic.Int64 (unix nanoseconds last noted)
}

func (r *recentSKUs) note(sku string, now time.Time) {
	at := now.UnixNano()
	if v, ok := r.seen.Load(sku); ok {
		v.(*atomic.Int64).Store(at)
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if v, ok := r.seen.Load(sku); ok {
		v.(*atomic.Int64).Store(at)
		return
	}
	if r.n >= maxRecentSKUs {
		oldest, oldestAt := "", int64(0)
		r.seen.Range(func(k, v any) bool {
			if t := v.(*atomic.Int64).Load(); oldest == "" || t < oldestAt {
				oldest, oldestAt = k.(string), t
			}
			return true
		})
		r.seen.Delete(oldest)
		r.n--
	}
	v := new(atomic.Int64)
	v.Store(at)
	// Cloned: the quick sold-out answer notes SKUs that are views of a
	// pooled buffer (quick.go).
	r.seen.Store(strings.Clone(sku), v)
	r.n++
}

// has reports whether sku was noted (and not yet forgotten): a lookup, no
// lock.
func (r *recentSKUs) has(sku string) bool {
	_, ok := r.seen.Load(sku)
	return ok
}

// list returns the SKUs noted within recentSKUTTL, the most recent first;
// it forgets the rest.
func (r *recentSKUs) list(now time.Time) []string {
	type entry struct {
		sku string
		at  int64
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var live []entry
	r.seen.Range(func(k, v any) bool {
		at := v.(*atomic.Int64).Load()
		if now.Sub(time.Unix(0, at)) > recentSKUTTL {
			r.seen.Delete(k)
			r.n--
		} else {
			live = append(live, entry{k.(string), at})
		}
		return true
	})
	slices.SortFunc(live, func(a, b entry) int { return cmp.Compare(b.at, a.at) })
	out := make([]string, 0, len(live))
	for _, e := range live {
		out = append(out, e.sku)
	}
	return out
}

// buyMetrics records what a buy decided (buying.Recorder): the SKUs its
// admission showed are real, the workflows started, the placements' answers.
type buyMetrics struct{ s *Server }

func (m buyMetrics) Admission(items []flashsale.Item, duplicate bool, err error) {
	m.s.noteSKUs(items, duplicate, err)
}

func (m buyMetrics) Started() {
	m.s.metrics.workflowsStarted.Add(1)
	m.s.prom.started.Inc()
}

func (m buyMetrics) Placed(res workflows.Reservation, err error) {
	m.s.prom.placements.WithLabelValues(placementResult(res, err)).Inc()
}

// placementCollectors are the placement limit's metrics, read at scrape
// time: the limit, what holds it, and the refusals.
func placementCollectors(l *edge.PlacementLimit) []prometheus.Collector {
	return []prometheus.Collector{
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Namespace: fsmetrics.Namespace, Name: "admission_rejected_total",
			Help: "New orders answered 429 BUSY because this instance's limit on placements in flight was reached.",
		}, func() float64 { return float64(l.Rejected()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: fsmetrics.Namespace, Name: "admission_limit",
			Help: "This instance's current limit on new orders in flight into Temporal: the adaptive limit or the latency cap, whichever is lower.",
		}, func() float64 { return float64(l.Limit()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: fsmetrics.Namespace, Name: "admission_throughput",
			Help: "New orders a second this instance's latency cap assumes Temporal completes (configured, or learned over the last second).",
		}, func() float64 { return l.Throughput() }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Namespace: fsmetrics.Namespace, Name: "admission_capped_total",
			Help: "New orders answered 429 BUSY because throughput x target latency were in flight (part of admission_rejected_total).",
		}, func() float64 { return float64(l.Capped()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: fsmetrics.Namespace, Name: "admission_in_flight",
			Help: "New orders from this instance waiting for Temporal's answer.",
		}, func() float64 { return float64(l.InFlight()) }),
	}
}

// noteSKUs records the SKUs the edge's answer shows are real: every item
// of a request it admitted (each was read from Redis, or MySQL while Redis
// is down), or the one SKU that decided a refusal (found sold out, or with
// its window full). Nothing else: an item the edge never looked at, or
// found unknown, may be a name the client made up, and a flood of those
// must neither grow the map nor push real SKUs out of the gauges.
func (s *Server) noteSKUs(items []flashsale.Item, duplicate bool, admitErr error) {
	now := time.Now()
	if admitErr != nil {
		if sku, ok := edge.DecidingSKU(admitErr); ok {
			s.recent.note(sku, now)
		}
		return
	}
	if duplicate {
		// A repeat of a placed order is sent on unread: its items are
		// whatever the repeat says.
		return
	}
	for _, it := range items {
		s.recent.note(it.SKU, now)
	}
}

// noteSKU records a SKU an operator put on sale.
func (s *Server) noteSKU(sku string) { s.recent.note(sku, time.Now()) }

var (
	skuRedisAvailableDesc = prometheus.NewDesc("flashsale_sku_redis_available_units",
		"Units left in the SKU's Redis buckets.", []string{"sku"}, nil)
	skuRedisBucketDesc = prometheus.NewDesc("flashsale_sku_redis_bucket_units",
		"Units left in one Redis bucket of the SKU (SKUs of at most 64 buckets).", []string{"sku", "bucket"}, nil)
	skuSoldOutDesc = prometheus.NewDesc("flashsale_sku_sold_out",
		"1 while the SKU's Redis sold-out flag is set.", []string{"sku"}, nil)
	skuDriftDesc = prometheus.NewDesc("flashsale_sku_redis_drift_units",
		"Units Redis handed out that MySQL refused (the SKU's drift counter), for reconciliation.", []string{"sku"}, nil)
	skuMySQLDesc = prometheus.NewDesc("flashsale_sku_mysql_units",
		"The SKU's units in MySQL by state: available, frozen (awaiting payment), sold.", []string{"sku", "state"}, nil)
	skuTotalDesc = prometheus.NewDesc("flashsale_sku_total_units",
		"The SKU's total units (MySQL).", []string{"sku"}, nil)
	skuReadErrorsDesc = prometheus.NewDesc("flashsale_sku_scrape_errors",
		"Reads for the per-SKU gauges that failed or timed out in the last scrape.", nil, nil)
)

// newSKUCollector reads the recent SKUs' stock at scrape time, within
// skuScrapeTimeout, at most once per skuCacheFor.
func newSKUCollector(s *Server) prometheus.Collector {
	c := skuCollector{s: s}
	return &fsmetrics.Cached{Descs: []*prometheus.Desc{skuRedisAvailableDesc, skuRedisBucketDesc, skuSoldOutDesc,
		skuDriftDesc, skuMySQLDesc, skuTotalDesc, skuReadErrorsDesc}, Every: skuCacheFor, Read: c.read}
}

// skuCollector reads the per-SKU gauges from Redis and MySQL.
type skuCollector struct {
	s *Server
}

func (c skuCollector) read() []prometheus.Metric {
	ctx, cancel := context.WithTimeout(context.Background(), skuScrapeTimeout)
	defer cancel()
	var out []prometheus.Metric
	add := func(d *prometheus.Desc, v float64, labels ...string) {
		out = append(out, prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...))
	}
	errs := 0
	for _, sku := range c.s.recent.list(time.Now()) {
		if c.s.deps.Stock != nil {
			// While Redis's breaker is open, a scrape must not add to it.
			if st, err := c.redisStock(ctx, sku); err != nil {
				errs++
			} else {
				add(skuRedisAvailableDesc, float64(st.Available), sku)
				add(skuSoldOutDesc, boolValue(st.SoldOut), sku)
				add(skuDriftDesc, float64(st.Drift), sku)
				if len(st.PerBucket) <= maxBucketSeries {
					for b, v := range st.PerBucket {
						add(skuRedisBucketDesc, float64(v), sku, strconv.Itoa(b))
					}
				}
			}
		}
		if c.s.deps.Store != nil {
			inv, err := c.s.deps.Store.Inventory(ctx, sku)
			if err != nil {
				errs++
				continue
			}
			add(skuMySQLDesc, float64(inv.Available), sku, "available")
			add(skuMySQLDesc, float64(inv.Frozen), sku, "frozen")
			add(skuMySQLDesc, float64(inv.Sold), sku, "sold")
			add(skuTotalDesc, float64(inv.Total), sku)
		}
	}
	if errs > 0 {
		c.s.log.Debug("per-sku metrics: reads failed", "failed", errs)
	}
	add(skuReadErrorsDesc, float64(errs))
	return out
}

// errRedisDown: the breaker is open, so the scrape does not ask Redis.
var errRedisDown = errors.New("redis circuit breaker open")

func (c skuCollector) redisStock(ctx context.Context, sku string) (inventory.Stock, error) {
	if !c.s.deps.Guard.Up() {
		return inventory.Stock{}, errRedisDown
	}
	return c.s.deps.Stock.Stock(ctx, sku)
}
