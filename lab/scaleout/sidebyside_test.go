//go:build scaleout

package scaleout

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"text/tabwriter"
	"time"

	enums "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/flashsale/flashsale/internal/backend"
	"github.com/flashsale/flashsale/internal/config"
	"github.com/flashsale/flashsale/internal/identity"
	"github.com/flashsale/flashsale/internal/inventory"
	"github.com/flashsale/flashsale/internal/jsoncall"
	"github.com/flashsale/flashsale/internal/loadgen"
	"github.com/flashsale/flashsale/internal/testenv"
)

// TestSideBySide runs the same sale twice in one run, through the same
// binaries, and measures both: first on the dev-server topology (one
// private `temporal server start-dev`, SQLite in memory, one history
// shard, with the flags of scripts/temporal-dev.sh; the single Redis on
// 6379; one worker and one API), then on the cluster topology of
// scripts/cluster.sh (five Temporal processes on PostgreSQL, the Redis
// Cluster, two workers and two APIs behind HAProxy). It reports orders/s,
// the reservation answer's p50/p99, and CPU per order of the Temporal
// server (and, for the cluster, of PostgreSQL) read from /proc/<pid>/stat
// before and after each sale. Not an assertion of speed: two shared cores
// cannot show scaling (docs/capacity.md). It fails only when a sale does
// not sell every unit. Run with scripts/sidebyside.sh; SBS_UNITS and
// SBS_BUYERS size the sale (300 units, 1500 buyers).
func TestSideBySide(t *testing.T) {
	units := int64(envInt("SBS_UNITS", 300))
	buyers := envInt("SBS_BUYERS", 1500)
	ctx := context.Background()

	mysqld := func() []int { return append(pgrepAll("mariadbd"), pgrepAll("mysqld")...) }
	dev := startDevStack(t)
	devRow := measureSale(t, ctx, "dev server: 1 Temporal process (SQLite in memory, 1 shard), Redis, 1 worker, 1 API",
		sbsTarget{
			base: dev.api, apis: []string{dev.api}, apiPids: func() []int { return dev.appPids()[1:] },
			temporal: "127.0.0.1:" + devTemporalPort, mysqlDSN: devMySQLDSN,
		}, units, buyers,
		map[string]func() []int{
			"temporal":  func() []int { return []int{dev.temporal} },
			"redis":     func() []int { return pgrepPort("redis-server", "6379") },
			"mysql":     mysqld,
			"flashsale": dev.appPids,
		})
	dev.stop()

	clusterRow := measureSale(t, ctx, "cluster: 5 Temporal processes (PostgreSQL, 8 shards, 2 history hosts), Redis Cluster 3+3, 2 workers, 2 APIs, HAProxy",
		sbsTarget{
			base: apiURL, apis: []string{"http://127.0.0.1:7481", "http://127.0.0.1:7482"},
			apiPids:  func() []int { return pidFiles("api-*.pid") },
			temporal: "127.0.0.1:7433", mysqlDSN: os.Getenv("MYSQL_DSN"),
		}, units, buyers,
		map[string]func() []int{
			"temporal": func() []int { return pidFiles("temporal-*.pid") },
			// The same CPU by service, for the per-unit costs.
			"temporal-history":  func() []int { return pidFiles("temporal-history-*.pid") },
			"temporal-frontend": func() []int { return pidFiles("temporal-frontend.pid") },
			"temporal-matching": func() []int { return pidFiles("temporal-matching.pid") },
			"postgresql":        func() []int { return pgrepAll("postgres") },
			"redis":             func() []int { return pgrepAll("redis-server") },
			"mysql":             mysqld,
			"flashsale":         func() []int { return pidFiles("worker-*.pid", "api-*.pid") },
		})

	var b strings.Builder
	fmt.Fprintf(&b, "side by side: %d units, %d buyers, 64 requests in flight, every winner pays\n", units, buyers)
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "topology\torders/s\treservation p50\tp99\tworkflows\ttransitions/order\tCPU ms/order: Temporal\tPostgreSQL\tRedis\tMySQL\tworker+api\tsold-out answers per API CPU-s\twall")
	for _, r := range []sbsRow{devRow, clusterRow} {
		fmt.Fprintf(tw, "%s\t%.1f\t%s\t%s\t%d\t%.1f\t%.1f\t%s\t%.1f\t%.1f\t%.1f\t%.0f\t%s\n", r.name, r.ordersPerSec,
			r.p50.Round(100*time.Microsecond), r.p99.Round(100*time.Microsecond), r.workflows, r.TransitionsPerOrder,
			r.cpuMsPerOrder["temporal"], pgCell(r), r.cpuMsPerOrder["redis"], r.cpuMsPerOrder["mysql"], r.cpuMsPerOrder["flashsale"],
			r.SoldOutPerCPUSec, r.wall.Round(100*time.Millisecond))
	}
	_ = tw.Flush()
	c := clusterRow.cpuMsPerOrder
	fmt.Fprintf(&b, "cluster's Temporal CPU per order by service: history %.1f ms, frontend %.1f ms, matching %.1f ms (the internal worker: the rest)\n",
		c["temporal-history"], c["temporal-frontend"], c["temporal-matching"])
	all, node := deductBurst(t, ctx, 20000)
	fmt.Fprintf(&b, "Redis Cluster deducts (inventory.Reserve, 1 unit, one 1-bucket SKU, 64 at a time): %.0f per CPU-second of all three masters, %.0f per CPU-second of the bucket's master\n", all, node)
	fmt.Print(b.String())
	t.Log("\n" + b.String())
	raw, _ := json.MarshalIndent([]sbsRow{devRow, clusterRow}, "", "  ")
	t.Logf("json: %s", raw)
}

func pgCell(r sbsRow) string {
	v, ok := r.cpuMsPerOrder["postgresql"]
	if !ok {
		return "- (SQLite in process)"
	}
	return fmt.Sprintf("%.1f", v)
}

type sbsRow struct {
	Name          string             `json:"topology"`
	OrdersPerSec  float64            `json:"orders_per_sec"`
	P50           time.Duration      `json:"reservation_p50"`
	P99           time.Duration      `json:"reservation_p99"`
	Workflows     int64              `json:"workflows_started"`
	CPUMsPerOrder map[string]float64 `json:"cpu_ms_per_workflow"`
	Wall          time.Duration      `json:"wall"`
	Answers       map[string]int64   `json:"answers"`
	// TransitionsPerOrder: Temporal state transitions of the sale's order
	// workflows (DescribeWorkflowExecution), averaged over a sample.
	TransitionsPerOrder float64 `json:"transitions_per_order"`
	// SoldOutPerCPUSec: 409 SOLD_OUT answers per second of the APIs' own
	// CPU, from a flood on the sold-out SKU straight at the instances.
	SoldOutPerCPUSec float64 `json:"sold_out_answers_per_api_cpu_second"`

	name           string
	ordersPerSec   float64
	p50, p99, wall time.Duration
	workflows      int64
	cpuMsPerOrder  map[string]float64
}

// measureSale sells units to buyers through base (admin calls too), with
// every winner paying at once, and reads the CPU of each group of
// processes before and after. apis are the API instances whose
// workflows_started counters are summed (the workflows the sale cost).
// sbsTarget is where a side-by-side sale goes: base takes the buyers (and
// the admin calls), apis are the instances behind it (their counters and
// pids), temporal and mysqlDSN let the orders be looked up afterwards.
type sbsTarget struct {
	base     string
	apis     []string
	apiPids  func() []int
	temporal string
	mysqlDSN string
}

func measureSale(t *testing.T, ctx context.Context, name string, tg sbsTarget, units int64, buyers int, groups map[string]func() []int) sbsRow {
	t.Helper()
	base, apis := tg.base, tg.apis
	sku := "sbs-" + testenv.UniqueID(t)
	createSKUAt(t, base, sku, units, 1999, 16, 1)
	started0 := workflowsStarted(t, apis)
	cpu0 := map[string]float64{}
	for g, pids := range groups {
		cpu0[g] = cpuSeconds(pids())
	}
	t.Logf("%s: selling %d units of %s to %d buyers through %s", name, units, sku, buyers, base)
	res, err := loadgen.Run(ctx, loadgen.Config{
		BaseURL: base, SKU: sku, Units: units, Buyers: buyers, Concurrency: 64,
		WebhookSecret: webhookSecret, Tokens: &identity.Minter{Secret: []byte(buyerSecret)},
		PayShare: 1, Deadline: 5 * time.Minute, Seed: 7,
	})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	row := sbsRow{name: name, wall: res.Elapsed, cpuMsPerOrder: map[string]float64{}}
	row.workflows = workflowsStarted(t, apis) - started0
	for g, pids := range groups {
		row.cpuMsPerOrder[g] = (cpuSeconds(pids()) - cpu0[g]) * 1000 / float64(max(row.workflows, 1))
	}
	if res.Paid != units || res.TimeToReserveAll == 0 {
		t.Errorf("%s: paid %d of %d units (answers %v)", name, res.Paid, units, res.Answers)
	} else {
		row.ordersPerSec = float64(units) / res.TimeToReserveAll.Seconds()
	}
	lat := res.ByAnswer["201"]
	if len(lat) > 0 {
		row.p50 = lat[len(lat)*50/100]
		row.p99 = lat[min(len(lat)-1, len(lat)*99/100)]
	}
	t.Logf("%s: all %d reserved after %s, paid %d, answers %v, workflows %d", name, res.Reserved, res.TimeToReserveAll, res.Paid, res.Answers, row.workflows)
	row.TransitionsPerOrder = transitionsPerOrder(t, ctx, tg, sku)
	row.SoldOutPerCPUSec = soldOutFlood(t, tg, sku, 20000)
	t.Logf("%s: %.1f state transitions per order, %.0f sold-out answers per API CPU-second", name, row.TransitionsPerOrder, row.SoldOutPerCPUSec)
	row.Name, row.OrdersPerSec, row.P50, row.P99, row.Workflows, row.CPUMsPerOrder, row.Wall, row.Answers =
		row.name, row.ordersPerSec, row.p50, row.p99, row.workflows, row.cpuMsPerOrder, row.wall, res.Answers
	return row
}

// transitionsPerOrder averages the state transitions of up to 30 of the
// SKU's order workflows, once closed.
func transitionsPerOrder(t *testing.T, ctx context.Context, tg sbsTarget, sku string) float64 {
	t.Helper()
	db, err := openMySQL(tg.mysqlDSN)
	if err != nil {
		t.Fatalf("mysql: %v", err)
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, `SELECT DISTINCT o.order_id FROM orders o
		JOIN order_items i ON i.order_id = o.order_id WHERE i.sku_id = ? LIMIT 30`, sku)
	if err != nil {
		t.Fatalf("orders of %s: %v", sku, err)
	}
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	rows.Close()
	c, err := client.DialContext(ctx, client.Options{HostPort: tg.temporal, Namespace: "default"})
	if err != nil {
		t.Fatalf("dial %s: %v", tg.temporal, err)
	}
	defer c.Close()
	var sum, n int64
	for _, id := range ids {
		for range 60 {
			d, err := c.DescribeWorkflow(ctx, "order-"+id, "")
			if err != nil {
				t.Fatalf("describe order-%s: %v", id, err)
			}
			info := d.RawResponse.GetWorkflowExecutionInfo()
			if info.GetStatus() != enums.WORKFLOW_EXECUTION_STATUS_RUNNING {
				sum += info.GetStateTransitionCount()
				n++
				break
			}
			time.Sleep(time.Second)
		}
	}
	if n == 0 {
		t.Errorf("no closed order workflow of %s to count transitions on", sku)
		return 0
	}
	return float64(sum) / float64(n)
}

// soldOutFlood sends n orders for the sold-out SKU straight at the API
// instances (64 at a time, 64 buyers), and returns the 409 SOLD_OUT answers
// per second of CPU the instances spent on them.
func soldOutFlood(t *testing.T, tg sbsTarget, sku string, n int) float64 {
	t.Helper()
	minter := &identity.Minter{Secret: []byte(buyerSecret)}
	auth := make([]http.Header, 64)
	for i := range auth {
		tok, err := minter.Token(fmt.Sprintf("flood-%d", i), time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		auth[i] = http.Header{"Authorization": {"Bearer " + tok}, "Content-Type": {"application/json"}}
	}
	body := []byte(`{"items":[{"sku_id":"` + sku + `","quantity":1}]}`)
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	var soldOut atomic.Int64
	cpu0 := cpuSeconds(tg.apiPids())
	var wg sync.WaitGroup
	for w := range 64 {
		wg.Go(func() {
			for i := w; i < n; i += 64 {
				res, err := jsoncall.Do(context.Background(), hc, http.MethodPost, tg.apis[i%len(tg.apis)]+"/api/v1/orders", body, auth[w])
				if err == nil && res.Status == http.StatusConflict {
					soldOut.Add(1)
				}
			}
		})
	}
	wg.Wait()
	cpu := cpuSeconds(tg.apiPids()) - cpu0
	if soldOut.Load() < int64(n)*9/10 || cpu <= 0 {
		t.Errorf("sold-out flood: %d of %d answered 409, API CPU %.2f s", soldOut.Load(), n, cpu)
		return 0
	}
	return float64(soldOut.Load()) / cpu
}

// deductBurst reserves n units, one order each, of a Redis-only SKU with
// one bucket on the Redis Cluster, 64 calls at a time, as the workers do
// (inventory.Reserve: the SKU slot's MGET, then take.lua in the bucket's
// slot), and returns the deducts per CPU-second of the three masters and
// of the bucket's master alone.
func deductBurst(t *testing.T, ctx context.Context, n int) (perAllMasters, perBucketNode float64) {
	t.Helper()
	cfg, err := config.Load()
	if err != nil {
		t.Fatal(err)
	}
	rdb := backend.NewRedis(cfg)
	defer rdb.Close()
	store := inventory.New(rdb, inventory.Options{})
	sku := "sbs-deduct-" + testenv.UniqueID(t)
	if _, err := store.Preheat(ctx, sku, int64(n), 1); err != nil {
		t.Fatalf("preheat %s: %v", sku, err)
	}
	port, err := masterPortFor(ctx, "fs:{sku:"+sku+":b0}:stock")
	if err != nil {
		t.Fatal(err)
	}
	var masters []int
	var bucketNode []int
	for _, p := range []string{"7001", "7002", "7003", "7004", "7005", "7006"} {
		if infoField(ctx, p, "replication", "role") != "master" {
			continue
		}
		raw, _ := os.ReadFile("/tmp/flashsale-redis-cluster/" + p + "/redis.pid")
		pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
		if err != nil {
			t.Fatalf("pid of redis-%s: %v", p, err)
		}
		masters = append(masters, pid)
		if p == port {
			bucketNode = append(bucketNode, pid)
		}
	}
	all0, node0 := cpuSeconds(masters), cpuSeconds(bucketNode)
	var failed atomic.Int64
	var wg sync.WaitGroup
	for w := range 64 {
		wg.Go(func() {
			for i := w; i < n; i += 64 {
				if _, err := store.Reserve(ctx, fmt.Sprintf("d-%d", i), sku, 1); err != nil {
					failed.Add(1)
				}
			}
		})
	}
	wg.Wait()
	all, node := cpuSeconds(masters)-all0, cpuSeconds(bucketNode)-node0
	if failed.Load() > 0 || all <= 0 || node <= 0 {
		t.Errorf("deduct burst: %d of %d failed, CPU %.2f s / %.2f s", failed.Load(), n, all, node)
		return 0, 0
	}
	return float64(n) / all, float64(n) / node
}

// workflowsStarted sums the APIs' own count of order workflows started.
func workflowsStarted(t *testing.T, apis []string) int64 {
	t.Helper()
	var n int64
	for _, a := range apis {
		resp, err := http.Get(a + "/metrics")
		if err != nil {
			t.Fatalf("GET %s/metrics: %v", a, err)
		}
		var m struct {
			WorkflowsStarted int64 `json:"workflows_started"`
		}
		err = json.NewDecoder(resp.Body).Decode(&m)
		resp.Body.Close()
		if err != nil {
			t.Fatalf("GET %s/metrics: %v", a, err)
		}
		n += m.WorkflowsStarted
	}
	return n
}

// cpuSeconds is the user+system CPU the processes have used so far
// (/proc/<pid>/stat fields 14 and 15, in clock ticks of 1/100 s).
func cpuSeconds(pids []int) float64 {
	var ticks int64
	for _, pid := range pids {
		raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		// The command name (field 2) may hold spaces: count from after it.
		s := string(raw)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
		u, _ := strconv.ParseInt(f[11], 10, 64)
		k, _ := strconv.ParseInt(f[12], 10, 64)
		ticks += u + k
	}
	return float64(ticks) / 100
}

// pidFiles reads cluster.sh's pid files matching the patterns.
func pidFiles(patterns ...string) []int {
	var out []int
	for _, p := range patterns {
		files, _ := filepath.Glob(filepath.Join(stateDir, "pids", p))
		for _, f := range files {
			raw, _ := os.ReadFile(f)
			if pid, err := strconv.Atoi(strings.TrimSpace(string(raw))); err == nil {
				out = append(out, pid)
			}
		}
	}
	return out
}

// pgrepPort is the processes named name whose command line names port
// (the single Redis on 6379 among the cluster's nodes).
func pgrepPort(name, port string) []int {
	var out []int
	for _, pid := range pgrepAll(name) {
		raw, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if strings.Contains(string(raw), ":"+port) {
			out = append(out, pid)
		}
	}
	return out
}

// pgrepAll is every process named name (PostgreSQL: the postmaster and one
// backend per connection; Temporal's pools keep theirs open).
func pgrepAll(name string) []int {
	out, _ := exec.Command("pgrep", "-x", name).Output()
	var pids []int
	for _, f := range strings.Fields(string(out)) {
		if pid, err := strconv.Atoi(f); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// devStack is a private dev-server topology: its own `temporal server
// start-dev` (so its CPU is the sale's alone; the shared one on 7233
// serves other engineers' tests), one worker and one API from cluster.sh's
// binaries, the single Redis on 6379 and MariaDB database flashsale_sbs.
type devStack struct {
	api      string
	temporal int
	procs    []*exec.Cmd
}

func (d *devStack) appPids() []int {
	var out []int
	for _, c := range d.procs[1:] {
		out = append(out, c.Process.Pid)
	}
	return out
}

func (d *devStack) stop() {
	for i := len(d.procs) - 1; i >= 0; i-- {
		c := d.procs[i]
		_ = c.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = c.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			_ = c.Process.Kill()
			<-done
		}
	}
	d.procs = nil
}

const (
	devTemporalPort = "7533"
	devAPIAddr      = "127.0.0.1:7581"
	devMySQLDSN     = "root@tcp(127.0.0.1:3306)/flashsale_sbs?parseTime=true"
)

func startDevStack(t *testing.T) *devStack {
	t.Helper()
	d := &devStack{api: "http://" + devAPIAddr}
	t.Cleanup(d.stop)
	for _, p := range []string{devTemporalPort, "7543", strings.TrimPrefix(devAPIAddr, "127.0.0.1:")} {
		if c, err := (&net.Dialer{Timeout: time.Second}).Dial("tcp", "127.0.0.1:"+p); err == nil {
			c.Close()
			t.Fatalf("port %s is taken: another side-by-side run?", p)
		}
	}
	logs := filepath.Join(stateDir, "logs")
	start := func(name string, env []string, bin string, args ...string) *exec.Cmd {
		f, err := os.OpenFile(filepath.Join(logs, "sbs-"+name+".log"), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, args...)
		cmd.Env, cmd.Stdout, cmd.Stderr = env, f, f
		if err := cmd.Start(); err != nil {
			t.Fatalf("start %s: %v", name, err)
		}
		d.procs = append(d.procs, cmd)
		return cmd
	}
	// The flags of scripts/temporal-dev.sh, on ports of its own, headless.
	tmp := start("temporal", os.Environ(), filepath.Join(stateDir, "bin", "temporal"),
		"server", "start-dev", "--ip", "127.0.0.1", "--port", devTemporalPort, "--http-port", "7543", "--headless",
		"--log-level", "warn",
		"--search-attribute", "OrderStatus=Keyword", "--search-attribute", "UserId=Keyword", "--search-attribute", "SkuIds=KeywordList",
		"--dynamic-config-value", "history.transferProcessorMaxPollRPS=1000",
		"--sqlite-pragma", "journal_mode=wal", "--sqlite-pragma", "synchronous=normal")
	d.temporal = tmp.Process.Pid
	waitFor(t, "dev server", 60*time.Second, func() bool {
		return exec.Command(filepath.Join(stateDir, "bin", "temporal"), "operator", "namespace", "describe",
			"--address", "127.0.0.1:"+devTemporalPort, "-n", "default").Run() == nil
	})
	env := append(append([]string{}, clusterEnv...),
		"TEMPORAL_ADDRESS=127.0.0.1:"+devTemporalPort, "REDIS_ADDR=127.0.0.1:6379",
		"MYSQL_DSN="+devMySQLDSN, "HTTP_ADDR="+devAPIAddr)
	w := start("worker", env, filepath.Join(stateDir, "bin", "worker"))
	waitFor(t, "dev worker", 60*time.Second, func() bool {
		raw, _ := os.ReadFile(filepath.Join(logs, "sbs-worker.log"))
		return strings.Contains(string(raw), "worker started") || w.ProcessState != nil
	})
	start("api", env, filepath.Join(stateDir, "bin", "api"))
	waitFor(t, "dev api", 60*time.Second, func() bool {
		resp, err := http.Get(d.api + "/readyz")
		if err != nil {
			return false
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return d
}

func waitFor(t *testing.T, what string, limit time.Duration, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("%s not ready within %s (logs: %s/logs/sbs-*.log)", what, limit, stateDir)
		}
		time.Sleep(250 * time.Millisecond)
	}
}
