// Package saletraffic counts a SKU's buy answers for every API instance
// together, so the live sale page shows the whole sale behind a load
// balancer, whichever instance a reload reaches.
//
// The hot path stays local: Observe is a map lookup and a few atomic adds
// (the quick sold-out answer included, which must not make a Redis call).
// Once a second Run flushes what each SKU gained since the last flush to
// Redis, as HINCRBYs into that second's hash in the SKU's slot
// (fs:{sku:S}:traffic:<unix second>, kept a minute) and into the SKU's
// totals (fs:{sku:S}:traffic, kept a week after its last answer). Read
// sums the last seconds' hashes of every instance in one round trip.
package saletraffic

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

const (
	// MaxSKUs caps the SKUs counted locally between flushes; a SKU beyond
	// it is not counted until an idle one is dropped. The caller counts
	// only SKUs it knows are real, so made-up names never get here.
	MaxSKUs = 64
	// FlushEvery is how often an instance's counts reach Redis: the page
	// lags the sale by at most this.
	FlushEvery = time.Second
	// Window is how far back Read looks: the p99 window; the request rate
	// is taken over its last RateWindow.
	Window     = 10 * time.Second
	RateWindow = 5 * time.Second
	// secondTTL keeps a second's hash past every window that reads it.
	secondTTL = time.Minute
	// totalTTL: a sale's totals outlive a quiet night, not a season.
	totalTTL = 7 * 24 * time.Hour
	// idleAfter: a SKU with nothing to flush for this long is dropped
	// from the local map (its totals stay in Redis).
	idleAfter = time.Minute
)

// Key is the SKU's totals hash; second's hashes append ":<unix second>".
// The hash tag is the SKU's own (inventory's key layout), so a cluster
// keeps them in the SKU's slot and a pipeline of one SKU's keys is one
// node's.
func Key(sku string) string { return "fs:{sku:" + sku + "}:traffic" }

func secondKey(sku string, sec int64) string { return Key(sku) + ":" + strconv.FormatInt(sec, 10) }

// Counter counts buy answers per SKU and flushes them to Redis.
type Counter struct {
	rdb    redis.UniversalClient
	bounds []float64

	mu sync.Mutex // held to add or drop SKUs
	n  int
	m  sync.Map // sku -> *counts
}

// New counts into rdb; bounds are the latency histogram's upper bounds in
// seconds, the same on every instance (the API's LatencyBuckets).
func New(rdb redis.UniversalClient, bounds []float64) *Counter {
	return &Counter{rdb: rdb, bounds: bounds}
}

// counts are one SKU's answers since the last flush.
type counts struct {
	codes [600]atomic.Int64
	// latency buckets (not cumulative; the last is +Inf) by outcome.
	admitted, shed []atomic.Int64
	// idleSince is the last flush that found nothing (unix nanoseconds),
	// 0 while busy.
	idleSince atomic.Int64
}

// Observe counts one buy answer for sku: its status, whether the edge
// (shed) or the order workflow (admitted) decided it, and how long it
// took. It never blocks on I/O and allocates only for a SKU new to it.
func (c *Counter) Observe(sku string, status int, shed bool, took time.Duration) {
	v, ok := c.m.Load(sku)
	if !ok {
		if v, ok = c.add(sku); !ok {
			return
		}
	}
	k := v.(*counts)
	if status > 0 && status < len(k.codes) {
		k.codes[status].Add(1)
	}
	hist := k.admitted
	if shed {
		hist = k.shed
	}
	secs := took.Seconds()
	i := 0
	for i < len(c.bounds) && secs > c.bounds[i] {
		i++
	}
	hist[i].Add(1)
}

func (c *Counter) add(sku string) (any, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if v, ok := c.m.Load(sku); ok {
		return v, true
	}
	if c.n >= MaxSKUs {
		return nil, false
	}
	k := &counts{admitted: make([]atomic.Int64, len(c.bounds)+1), shed: make([]atomic.Int64, len(c.bounds)+1)}
	// Cloned: the quick answer's SKU is a view of a pooled buffer.
	c.m.Store(strings.Clone(sku), k)
	c.n++
	return k, true
}

// Run flushes every FlushEvery until ctx ends, then once more.
func (c *Counter) Run(ctx context.Context) {
	if c.rdb == nil {
		<-ctx.Done()
		return
	}
	tick := time.NewTicker(FlushEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			// What the last second counted still belongs to the sale.
			fctx, cancel := context.WithTimeout(context.Background(), time.Second)
			_ = c.Flush(fctx, time.Now()) // Redis gone at shutdown: a second's counts lost, nothing else
			cancel()
			return
		case now := <-tick.C:
			_ = c.Flush(ctx, now) // kept for the next flush on failure
		}
	}
}

// Flush writes what every SKU counted since the last flush into now's
// second and the totals. What a failed write held is counted again, to go
// with the next flush.
func (c *Counter) Flush(ctx context.Context, now time.Time) error {
	if c.rdb == nil {
		return nil
	}
	type delta struct {
		sku            string
		k              *counts
		codes          map[int]int64
		admitted, shed []int64
	}
	var deltas []delta
	var idle []string
	c.m.Range(func(key, v any) bool {
		k := v.(*counts)
		d := delta{sku: key.(string), k: k, codes: map[int]int64{}, admitted: make([]int64, len(k.admitted)), shed: make([]int64, len(k.shed))}
		some := false
		for code := range k.codes {
			if n := k.codes[code].Swap(0); n != 0 {
				d.codes[code], some = n, true
			}
		}
		for i := range k.admitted {
			d.admitted[i], d.shed[i] = k.admitted[i].Swap(0), k.shed[i].Swap(0)
			some = some || d.admitted[i] != 0 || d.shed[i] != 0
		}
		switch {
		case some:
			k.idleSince.Store(0)
			deltas = append(deltas, d)
		case k.idleSince.Load() == 0:
			k.idleSince.Store(now.UnixNano())
		case now.Sub(time.Unix(0, k.idleSince.Load())) > idleAfter:
			idle = append(idle, key.(string))
		}
		return true
	})
	if len(idle) > 0 {
		c.mu.Lock()
		for _, sku := range idle {
			c.m.Delete(sku)
			c.n--
		}
		c.mu.Unlock()
	}
	if len(deltas) == 0 {
		return nil
	}
	pipe := c.rdb.Pipeline()
	sec := now.Unix()
	for _, d := range deltas {
		sku := d.sku
		for _, key := range []string{secondKey(sku, sec), Key(sku)} {
			for code, n := range d.codes {
				pipe.HIncrBy(ctx, key, "c"+strconv.Itoa(code), n)
			}
			for i := range d.admitted {
				if d.admitted[i] != 0 {
					pipe.HIncrBy(ctx, key, "a"+strconv.Itoa(i), d.admitted[i])
				}
				if d.shed[i] != 0 {
					pipe.HIncrBy(ctx, key, "s"+strconv.Itoa(i), d.shed[i])
				}
			}
		}
		pipe.Expire(ctx, secondKey(sku, sec), secondTTL)
		pipe.Expire(ctx, Key(sku), totalTTL)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		// Back where they came from; HINCRBY may have landed in part, so
		// a failure can count a second twice, never lose it.
		for _, d := range deltas {
			for code, n := range d.codes {
				d.k.codes[code].Add(n)
			}
			for i := range d.admitted {
				d.k.admitted[i].Add(d.admitted[i])
				d.k.shed[i].Add(d.shed[i])
			}
		}
		return fmt.Errorf("flush sale traffic: %w", err)
	}
	return nil
}

// Traffic is a SKU's buy answers over every instance.
type Traffic struct {
	// Answers counts the SKU's buy answers by HTTP status, totals.
	Answers map[string]int64
	// Recent counts the answers of the last RateWindow (complete seconds).
	Recent int64
	// Bounds are the latency buckets' upper bounds, the last +Inf
	// implied; Admitted and Shed count the last Window's answers in each
	// (not cumulative, len(Bounds)+1).
	Bounds         []float64
	Admitted, Shed []uint64
}

// Read sums sku's totals and its last Window of complete seconds, as of
// now: one pipeline of HGETALLs.
func (c *Counter) Read(ctx context.Context, sku string, now time.Time) (Traffic, error) {
	secs := int64(Window / time.Second)
	last := now.Unix() - 1 // the current second is still being flushed
	pipe := c.rdb.Pipeline()
	total := pipe.HGetAll(ctx, Key(sku))
	perSec := make([]*redis.MapStringStringCmd, secs)
	for i := range perSec {
		perSec[i] = pipe.HGetAll(ctx, secondKey(sku, last-int64(i)))
	}
	if _, err := pipe.Exec(ctx); err != nil && err != redis.Nil {
		return Traffic{}, fmt.Errorf("read sale traffic of %s: %w", sku, err)
	}
	out := Traffic{Answers: map[string]int64{}, Bounds: c.bounds,
		Admitted: make([]uint64, len(c.bounds)+1), Shed: make([]uint64, len(c.bounds)+1)}
	for field, v := range total.Val() {
		if code, ok := strings.CutPrefix(field, "c"); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			out.Answers[code] += n
		}
	}
	rateSecs := int(RateWindow / time.Second)
	for i, cmd := range perSec {
		for field, v := range cmd.Val() {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || len(field) < 2 {
				continue
			}
			switch field[0] {
			case 'c':
				if i < rateSecs {
					out.Recent += n
				}
			case 'a', 's':
				b, err := strconv.Atoi(field[1:])
				if err != nil || b < 0 || b > len(c.bounds) {
					continue
				}
				if field[0] == 'a' {
					out.Admitted[b] += uint64(n)
				} else {
					out.Shed[b] += uint64(n)
				}
			}
		}
	}
	return out, nil
}
