package metrics_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/flashsale/flashsale/internal/metrics"
)

// TestCachedReadsOncePerPeriod: scrapes within Every are answered from the
// last read; the first scrape after it reads again.
func TestCachedReadsOncePerPeriod(t *testing.T) {
	desc := prometheus.NewDesc("flashsale_test_reads", "Reads so far.", nil, nil)
	reads := 0
	c := &metrics.Cached{Descs: []*prometheus.Desc{desc}, Every: 50 * time.Millisecond, Read: func() []prometheus.Metric {
		reads++
		return []prometheus.Metric{prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, float64(reads))}
	}}
	// A pedantic registry checks that Describe names what Collect sends.
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(c))
	scrape := func() (float64, error) {
		fams, err := reg.Gather()
		if err != nil || len(fams) != 1 {
			return 0, fmt.Errorf("gathered %d families: %v", len(fams), err)
		}
		return fams[0].GetMetric()[0].GetGauge().GetValue(), nil
	}

	v, err := scrape()
	require.NoError(t, err)
	require.Equal(t, 1.0, v)
	v, err = scrape()
	require.NoError(t, err)
	require.Equal(t, 1.0, v, "a scrape within Every reads nothing")
	require.Eventually(t, func() bool { v, err := scrape(); return err == nil && v == 2 }, 5*time.Second, 10*time.Millisecond)
}
