package metrics

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Cached is a prometheus.Collector for gauges read at scrape time from
// where the numbers are recorded (Temporal's visibility, MySQL, Redis), at
// most once per Every: several Prometheus servers, or a person reloading a
// dashboard, must not turn every scrape into another round of reads. Read
// bounds its own time; a read that failed should leave its gauge out (no
// stale number) and count in an error gauge of its own.
type Cached struct {
	// Descs are every metric Read may return.
	Descs []*prometheus.Desc
	Every time.Duration
	Read  func() []prometheus.Metric

	mu     sync.Mutex
	at     time.Time
	cached []prometheus.Metric
}

// Describe sends Descs.
func (c *Cached) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.Descs {
		ch <- d
	}
}

// Collect sends the last read's metrics, reading again once Every has
// passed since it.
func (c *Cached) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if now := time.Now(); c.cached == nil || now.Sub(c.at) >= c.Every {
		c.cached, c.at = c.Read(), now
	}
	for _, m := range c.cached {
		ch <- m
	}
}
