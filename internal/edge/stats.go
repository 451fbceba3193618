package edge

import (
	"sync/atomic"
	"time"
)

// Stats are the gate's counters since start.
type Stats struct {
	Requests int64 `json:"requests"`
	// Admitted requests went on to start their order's workflow.
	Admitted int64 `json:"admitted"`
	// Duplicates repeated a placed order id and went to Temporal for its
	// first answer without starting anything.
	Duplicates   int64 `json:"duplicates"`
	SoldOutLocal int64 `json:"shed_sold_out_local"`
	SoldOutRedis int64 `json:"shed_sold_out_redis"`
	SoldOutStock int64 `json:"shed_sold_out_stock"`
	Busy         int64 `json:"shed_busy"`
	RateLimited  int64 `json:"rate_limited"`
	UnknownSKU   int64 `json:"unknown_sku"`
	// LimitExceeded requests asked for more than the buyer may still hold
	// of a SKU (Redis's count) and started no workflow.
	LimitExceeded int64 `json:"shed_limit_exceeded"`
	// PassOverLimit counts pass holders (Request.Pass) admitted while the
	// placement limit had no permit free: they would have been BUSY.
	PassOverLimit int64 `json:"pass_over_limit"`
	IDConflicts   int64 `json:"id_conflicts"`
	Unavailable   int64 `json:"unavailable"`
	// Degraded requests were decided without Redis (it was down).
	Degraded     int64 `json:"degraded"`
	StockChanges int64 `json:"stock_changes_heard"`
	// Subscribed is true while the stock-change subscription is live.
	Subscribed       bool  `json:"subscribed"`
	InFlightUnits    int64 `json:"in_flight_units"`
	LocalSoldOutSKUs int   `json:"local_sold_out_skus"`
}

type counters struct {
	requests, admitted, duplicates                 atomic.Int64
	soldOutLocal, soldOutRedis, soldOutStock, busy atomic.Int64
	rateLimited, unknownSKU, idConflicts           atomic.Int64
	limitExceeded, passOverLimit                   atomic.Int64
	unavailable, stockChanges, degraded            atomic.Int64
}

// Stats returns a snapshot of the counters.
func (g *Gate) Stats() Stats {
	c := &g.stats
	return Stats{
		Requests: c.requests.Load(), Admitted: c.admitted.Load(), Duplicates: c.duplicates.Load(),
		SoldOutLocal: c.soldOutLocal.Load(), SoldOutRedis: c.soldOutRedis.Load(), SoldOutStock: c.soldOutStock.Load(),
		Busy: c.busy.Load(), RateLimited: c.rateLimited.Load(), UnknownSKU: c.unknownSKU.Load(),
		LimitExceeded: c.limitExceeded.Load(), PassOverLimit: c.passOverLimit.Load(),
		IDConflicts: c.idConflicts.Load(), Unavailable: c.unavailable.Load(), StockChanges: c.stockChanges.Load(),
		Degraded:      c.degraded.Load(),
		Subscribed:    g.subscribed.Load(),
		InFlightUnits: g.inflight.total(), LocalSoldOutSKUs: g.cache.size(time.Now()),
	}
}
