//go:build integration

package main

// BenchmarkTemporalQuota checks the capacity model's Temporal row
// (docs/capacity.md, check a): a whole order costs the dev server a
// measured amount of CPU, so a server held to q cores by a CPU quota
// should finish q / (CPU per order) orders a second. It measures the CPU
// per order unthrottled, then puts the dev server (one process: frontend,
// history, matching and its SQLite) in a cgroup v1 `cpu` child with
// cpu.cfs_quota_us set to 0.5 and 1.0 core, predicts, measures and prints
// both. Reproduce (root, cgroup v1 `cpu` mounted at /sys/fs/cgroup/cpu;
// about 3 minutes):
//
//	flock /tmp/flashsale-heavy.lock go test -tags integration -run '^$' -bench TemporalQuota -benchtime 1x -timeout 20m ./starter/
//
// CAPCHECK_SECONDS (15) sets each throttled run's length, CAPCHECK_CONC
// (48) the callers: enough that the server, not the callers, is the limit.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"

	"github.com/flashsale/flashsale/internal/config"
	"github.com/flashsale/flashsale/internal/procstat"
	"github.com/flashsale/flashsale/lab/bench"
)

// cgroupCPU is the cgroup v1 cpu controller's mount.
const cgroupCPU = "/sys/fs/cgroup/cpu"

func BenchmarkTemporalQuota(b *testing.B) {
	ctx := context.Background()
	seconds := envInt(b, "CAPCHECK_SECONDS", 15)
	conc := envInt(b, "CAPCHECK_CONC", 48)
	cfg, err := config.Load()
	require.NoError(b, err)
	dsn, err := mysql.ParseDSN(cfg.MySQLDSN)
	require.NoError(b, err)
	dsn.DBName = "flashsale_capcheck"
	cfg.MySQLDSN = dsn.FormatDSN()
	cfg.PaymentTimeout = 15 * time.Minute
	br := &benchRun{cfg: cfg, run: time.Now().UTC().Format("150405"), started: time.Now()}
	st, err := br.start(ctx, "capcheck", "", nil)
	require.NoError(b, err)
	b.Cleanup(st.Close)
	procs := br.procs(st)
	sku := "capcheck-" + br.run
	require.NoError(b, st.sku(ctx, sku, 1<<30))

	run := 0
	orders := func(n int) (bench.Stat, []time.Duration) {
		run++
		c0 := procstat.CPUOf(procs)
		_, whole := bench.Orders(ctx, st.svc, sku, 100, fmt.Sprintf("r%d", run), n, conc)
		c1 := procstat.CPUOf(procs)
		require.Zero(b, whole.Errors, whole.FirstError)
		per := make([]time.Duration, len(procs))
		for i := range procs {
			per[i] = (c1[i] - c0[i]) / time.Duration(max(whole.Ops, 1))
		}
		return whole, per
	}
	// Warm up (the server's caches, the worker's connections), then the
	// unthrottled cost: the model's input.
	orders(200)
	free, cost := orders(600)
	for i, p := range procs {
		b.Logf("unthrottled: %-22s %.2f ms CPU per order", p.Name, ms(cost[i]))
	}
	server := cost[0]
	b.Logf("unthrottled: %.1f orders/s at %d callers", free.PerSec, conc)
	b.ReportMetric(ms(server), "server-cpu-ms/order")

	group := filepath.Join(cgroupCPU, fmt.Sprintf("flashsale-capcheck-%d", os.Getpid()))
	require.NoError(b, os.Mkdir(group, 0o755))
	b.Cleanup(func() {
		// Back to the root group, then the child can go.
		_ = os.WriteFile(filepath.Join(cgroupCPU, "cgroup.procs"), []byte(strconv.Itoa(st.temporal.PID())), 0o644)
		_ = os.Remove(group)
	})
	require.NoError(b, os.WriteFile(filepath.Join(group, "cpu.cfs_period_us"), []byte("100000"), 0o644))
	// cgroup.procs moves every thread of the process.
	require.NoError(b, os.WriteFile(filepath.Join(group, "cgroup.procs"), []byte(strconv.Itoa(st.temporal.PID())), 0o644))
	for _, cores := range []float64{0.5, 1.0} {
		quota := strconv.Itoa(int(cores * 100000))
		require.NoError(b, os.WriteFile(filepath.Join(group, "cpu.cfs_quota_us"), []byte(quota), 0o644))
		predicted := cores / server.Seconds()
		n := int(predicted * float64(seconds))
		orders(max(conc, n/5)) // the backlog of the previous quota drains
		t0 := throttled(b, group)
		got, per := orders(n)
		t1 := throttled(b, group)
		// The server's CPU over the run, in cores: below the quota, and
		// rarely throttled, means the machine, not the quota, was short.
		used := float64(per[0]) * float64(got.Ops) / (got.Seconds * float64(time.Second))
		b.Logf("quota %.1f core: predicted %.1f orders/s (%.1f / %.2f ms), measured %.1f orders/s (%d orders, %.1f s): %.2fx; server CPU per order under the quota %.2f ms, the server used %.2f cores, throttled in %d of %d periods; whole order p50 %.0f ms",
			cores, predicted, cores, ms(server), got.PerSec, got.Ops, got.Seconds, got.PerSec/predicted, ms(per[0]), used, t1[1]-t0[1], t1[0]-t0[0], got.P50ms)
		b.ReportMetric(predicted, fmt.Sprintf("q%.1f-predicted/s", cores))
		b.ReportMetric(got.PerSec, fmt.Sprintf("q%.1f-measured/s", cores))
	}
}

// throttled reads a cgroup's cpu.stat: periods and periods throttled.
func throttled(b *testing.B, group string) [2]int64 {
	raw, err := os.ReadFile(filepath.Join(group, "cpu.stat"))
	require.NoError(b, err)
	var out [2]int64
	for _, line := range strings.Split(string(raw), "\n") {
		k, v, _ := strings.Cut(line, " ")
		n, _ := strconv.ParseInt(v, 10, 64)
		switch k {
		case "nr_periods":
			out[0] = n
		case "nr_throttled":
			out[1] = n
		}
	}
	return out
}

func envInt(b *testing.B, key string, def int) int {
	v := os.Getenv(key)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	require.NoError(b, err)
	return n
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
