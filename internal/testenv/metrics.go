package testenv

import dto "github.com/prometheus/client_model/go"

// MetricValue is the value of the first series of family f whose labels
// include want: a counter's or a gauge's value, a histogram's count of
// observations; -1 when no series matches (f nil included). The API's and
// the worker's metrics tests read both scrapes and registries with it.
func MetricValue(f *dto.MetricFamily, want map[string]string) float64 {
next:
	for _, m := range f.GetMetric() {
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if have[k] != v {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.GetCounter().GetValue()
		case m.Gauge != nil:
			return m.GetGauge().GetValue()
		case m.Histogram != nil:
			return float64(m.GetHistogram().GetSampleCount())
		}
	}
	return -1
}
