package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"runtime/pprof"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/flashsale/flashsale/lab/bench"
)

// A sale alone (--only sale) is a diagnosis as much as a measurement: what
// does an admitted placement spend its wall time on, and what in these
// processes makes placements wait for each other? Beside the CPU profile
// (profileSale) each sale writes to --out:
//
//   - sale-<i>-<side>-block.pprof and -mutex.pprof: where this process's
//     goroutines (API, worker, crowd) blocked, cumulative since the first
//     sale (compare two with go tool pprof -base);
//   - sale-<i>-<side>-goroutines.txt: every goroutine's stack ten seconds
//     into the sale, grouped;
//   - sale-<i>-<side>-latency.txt: the sale's share of every latency
//     histogram of the Temporal SDK (workflow and local-activity tasks,
//     each RPC) and of the dev server (its service and persistence
//     latencies, by operation), and the whole box's CPU use.

// blockRate and mutexFraction sample what blocks: one event per 100 µs
// blocked, one contended mutex in 10.
const (
	blockRate     = 100_000
	mutexFraction = 10
)

// diagSnapshot is every histogram and counter of the SDK's registry and
// the dev server's /metrics at one moment, and the box's CPU times.
type diagSnapshot struct {
	at      time.Time
	hists   map[string]hist
	busy    float64 // seconds of CPU the box spent busy (all cores)
	idle    float64 // and idle
	counter map[string]float64
}

type hist struct {
	count  uint64
	sum    float64
	bounds []float64
	counts []uint64 // cumulative, per bound
}

// saleDiag is one sale's diagnosis, started before it and written after.
type saleDiag struct {
	b      *benchRun
	st     *stack
	prefix string
	before diagSnapshot
	stopGR chan struct{}
}

func (b *benchRun) startDiag(st *stack, i int, side string) *saleDiag {
	if b.out == "" || b.p.Only != "sale" {
		return nil
	}
	runtime.SetBlockProfileRate(blockRate)
	runtime.SetMutexProfileFraction(mutexFraction)
	d := &saleDiag{b: b, st: st, prefix: fmt.Sprintf("%s/sale-%d-%s", b.out, i, side), stopGR: make(chan struct{})}
	d.before = d.snapshot()
	go func() {
		select {
		case <-d.stopGR:
			return
		case <-time.After(10 * time.Second):
		}
		f, err := os.Create(d.prefix + "-goroutines.txt")
		if err != nil {
			return
		}
		_ = pprof.Lookup("goroutine").WriteTo(f, 1)
		_ = f.Close()
	}()
	return d
}

// finish writes the profiles and the latency breakdown.
func (d *saleDiag) finish() {
	if d == nil {
		return
	}
	close(d.stopGR)
	after := d.snapshot()
	for _, name := range []string{"block", "mutex"} {
		f, err := os.Create(d.prefix + "-" + name + ".pprof")
		if err != nil {
			continue
		}
		_ = pprof.Lookup(name).WriteTo(f, 0)
		_ = f.Close()
	}
	var w strings.Builder
	secs := after.at.Sub(d.before.at).Seconds()
	busy, idle := after.busy-d.before.busy, after.idle-d.before.idle
	fmt.Fprintf(&w, "sale of %.1f s; box CPU busy %.1f s, idle %.1f s (%.2f of %d cores busy)\n\n",
		secs, busy, idle, busy/secs, runtime.NumCPU())
	fmt.Fprintf(&w, "%-110s %8s %9s %9s %9s %9s\n", "histogram (SDK: temporal_*, dev server: the rest)", "n", "mean ms", "p50 ms", "p99 ms", "sum s")
	keys := make([]string, 0, len(after.hists))
	for k := range after.hists {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		h := after.hists[k].since(d.before.hists[k])
		if h.count == 0 {
			continue
		}
		fmt.Fprintf(&w, "%-110s %8d %9.2f %9.1f %9.1f %9.2f\n", k, h.count, 1000*h.sum/float64(h.count), h.quantileMs(0.5), h.quantileMs(0.99), h.sum)
	}
	fmt.Fprintf(&w, "\n%-110s %12s\n", "counter", "delta")
	keys = keys[:0]
	for k := range after.counter {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if v := after.counter[k] - d.before.counter[k]; v != 0 {
			fmt.Fprintf(&w, "%-110s %12.0f\n", k, v)
		}
	}
	if err := os.WriteFile(d.prefix+"-latency.txt", []byte(w.String()), 0o644); err != nil {
		d.b.logf("sale diagnosis: %v", err)
	}
	d.b.logf("sale diagnosis: %s-{latency.txt,block.pprof,mutex.pprof,goroutines.txt}; box %.2f cores busy", d.prefix, busy/secs)
}

func (d *saleDiag) snapshot() diagSnapshot {
	s := diagSnapshot{at: time.Now(), hists: map[string]hist{}, counter: map[string]float64{}}
	s.busy, s.idle = boxCPU()
	if d.st.sdk != nil {
		if mfs, err := d.st.sdk.Gather(); err == nil {
			for _, mf := range mfs {
				s.add(mf)
			}
		}
	}
	if u := d.st.serverMetricsURL(); u != "" {
		if mfs, err := scrape(u); err == nil {
			for _, mf := range mfs {
				s.add(mf)
			}
		}
	}
	return s
}

// serverFamilies are the dev server's families worth reading: the rest is
// noise for this question.
var serverFamily = regexp.MustCompile(`^(service_latency|persistence_latency|persistence_requests|task_latency|task_latency_queue|task_latency_processing|task_schedule_to_start_latency|lock_latency|cache_latency|history_size|service_requests|poll_success|poll_timeouts|task_latency_userlatency|sync_match_latency|asyncmatch_latency|acquire_shard_lock_latency|persistence_session_refresh_attempts|task_requests|namespace_cache_callbacks_latency|replication_task_processing_latency|task_attempt|task_loads|shard_lock_latency|task_rescheduler_pending_tasks|queue_reader_event_count|update_workflow_execution|history_count)`)

func (s *diagSnapshot) add(mf *dto.MetricFamily) {
	name := mf.GetName()
	if !strings.HasPrefix(name, "temporal_") && !serverFamily.MatchString(name) {
		return
	}
	for _, m := range mf.GetMetric() {
		var labels []string
		for _, l := range m.GetLabel() {
			switch l.GetName() {
			case "operation", "task_type", "activity_type", "workflow_type", "service_name", "namespace_state", "poller_type":
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
		}
		key := name + "{" + strings.Join(labels, ",") + "}"
		switch {
		case m.GetHistogram() != nil:
			h := m.GetHistogram()
			prev := s.hists[key]
			prev.count += h.GetSampleCount()
			prev.sum += h.GetSampleSum()
			if prev.bounds == nil {
				for _, b := range h.GetBucket() {
					prev.bounds = append(prev.bounds, b.GetUpperBound())
					prev.counts = append(prev.counts, b.GetCumulativeCount())
				}
			} else if len(prev.counts) == len(h.GetBucket()) {
				for i, b := range h.GetBucket() {
					prev.counts[i] += b.GetCumulativeCount()
				}
			}
			s.hists[key] = prev
		case m.GetCounter() != nil:
			s.counter[key] += m.GetCounter().GetValue()
		}
	}
}

// since is what was observed between before and h (the same histogram,
// read twice); the bucket arithmetic is bench.Buckets'.
func (h hist) since(before hist) hist {
	d := h.buckets().Since(before.buckets())
	n := len(d.Counts) - 1 // without the +Inf bucket buckets added
	return hist{count: h.count - before.count, sum: h.sum - before.sum, bounds: h.bounds, counts: d.Counts[:n]}
}

// quantileMs interpolates within the bucket, as histogram_quantile does
// (bench.Buckets.QuantileMs).
func (h hist) quantileMs(q float64) float64 { return h.buckets().QuantileMs(q) }

// buckets is h as bench.Buckets: its bounds and counts with the +Inf
// bucket (every observation) last.
func (h hist) buckets() bench.Buckets {
	return bench.Buckets{Bounds: append(slices.Clip(h.bounds), math.Inf(1)), Counts: append(slices.Clip(h.counts), h.count)}
}

func scrape(url string) (map[string]*dto.MetricFamily, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	return p.TextToMetricFamilies(resp.Body)
}

// boxCPU is the whole machine's busy and idle CPU seconds (/proc/stat);
// zero where there is none.
func boxCPU() (busy, idle float64) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	fields := strings.Fields(line)
	if len(fields) < 8 || fields[0] != "cpu" {
		return 0, 0
	}
	var v [8]float64
	for i := range v {
		_, _ = fmt.Sscan(fields[i+1], &v[i])
	}
	// user nice system idle iowait irq softirq steal, in USER_HZ (100).
	busy = (v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) / 100
	idle = (v[3] + v[4]) / 100
	return busy, idle
}

// metricsURL is the dev server's /metrics address, read from the line its
// CLI prints at start ("Metrics: http://...").
var metricsLine = regexp.MustCompile(`Metrics:\s+(http://\S+/metrics)`)

func (s *stack) serverMetricsURL() string {
	b, err := os.ReadFile(s.temporal.LogPath())
	if err != nil {
		return ""
	}
	m := metricsLine.FindSubmatch(b)
	if m == nil {
		return ""
	}
	return string(m[1])
}

var _ prometheus.Gatherer = (*prometheus.Registry)(nil)

// The servers section's production-shaped sales are diagnosed from
// outside, their processes being separate: each sale writes to --out
//
//   - sale-<i>-<side>-temporal-cpu.pprof: the temporal-server's CPU for
//     serverCPUFor from the sale's start (TEMPORAL_PPROF_PORT), and the top
//     of it in the markdown;
//   - sale-<i>-<side>-<proc>-goroutine.pprof for temporal, worker and api
//     when half the units are reserved;
//   - sale-<i>-<side>-<proc>-block.pprof and -mutex.pprof for the worker
//     and the API (METRICS_PPROF, the rates above), cumulative since they
//     started (compare two with go tool pprof -base).
//
// temporal-server 1.29.1 never turns block or mutex sampling on and has no
// setting that does (common/pprof only serves net/http/pprof), so its
// block and mutex profiles would be empty: they are not fetched.
const serverCPUFor = 20 * time.Second

// remoteDiag is one sale's diagnosis of a side's processes.
type remoteDiag struct {
	b      *benchRun
	prefix string
	pprof  map[string]string // process: its /debug/pprof base URL
	cpu    chan error
	once   sync.Once
}

func (b *benchRun) startRemoteDiag(s *serverSide, i int) *remoteDiag {
	if s.pprof["temporal"] == "" {
		return nil
	}
	d := &remoteDiag{b: b, prefix: fmt.Sprintf("%s/sale-%d-%s", b.out, i, s.name), pprof: s.pprof, cpu: make(chan error, 1)}
	go func() {
		d.cpu <- fetchProfile(fmt.Sprintf("%s/profile?seconds=%d", d.pprof["temporal"], int(serverCPUFor.Seconds())),
			d.prefix+"-temporal-cpu.pprof", serverCPUFor+30*time.Second)
	}()
	return d
}

// midway snapshots every process's goroutines, once.
func (d *remoteDiag) midway() {
	if d == nil {
		return
	}
	d.once.Do(func() {
		go func() {
			for proc, u := range d.pprof {
				if err := fetchProfile(u+"/goroutine", d.prefix+"-"+proc+"-goroutine.pprof", 30*time.Second); err != nil {
					d.b.logf("sale diagnosis: %v", err)
				}
			}
		}()
	})
}

// finish fetches the worker's and API's block and mutex profiles, waits
// for the server's CPU profile, and returns its top 10 (go tool pprof
// -top), or why there is none.
func (d *remoteDiag) finish(ctx context.Context) string {
	if d == nil {
		return ""
	}
	for _, proc := range []string{"worker", "api"} {
		for _, kind := range []string{"block", "mutex"} {
			if err := fetchProfile(d.pprof[proc]+"/"+kind, d.prefix+"-"+proc+"-"+kind+".pprof", 30*time.Second); err != nil {
				d.b.logf("sale diagnosis: %v", err)
			}
		}
	}
	if err := <-d.cpu; err != nil {
		return "no CPU profile: " + err.Error()
	}
	top, err := exec.CommandContext(ctx, "go", "tool", "pprof", "-top", "-nodecount=10", d.prefix+"-temporal-cpu.pprof").Output()
	if err != nil {
		return "no profile text (go tool pprof: " + err.Error() + ")"
	}
	d.b.logf("sale diagnosis: %s-*.pprof", d.prefix)
	return string(top)
}

// fetchProfile saves what url answers to path.
func fetchProfile(url, path string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 200))
		return fmt.Errorf("%s: %d %s", url, resp.StatusCode, msg)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	_, err = io.Copy(f, resp.Body)
	return errors.Join(err, f.Close())
}
