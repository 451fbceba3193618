package backend

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/flashsale/flashsale/internal/metrics"
)

// RegisterMetrics puts the state every process shares on reg: whether this
// process's Redis circuit breaker is closed. While it is open the process
// is degraded: reservations go to MySQL alone.
func (b *Backend) RegisterMetrics(reg prometheus.Registerer) error {
	return reg.Register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Namespace: metrics.Namespace,
		Name:      "redis_up",
		Help:      "1 while this process's Redis circuit breaker is closed; 0 while it is open or probing (degraded: reservations in MySQL alone).",
	}, func() float64 {
		if b.Guard.Up() {
			return 1
		}
		return 0
	}))
}
