package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/flashsale/flashsale/internal/devstack"
	"github.com/flashsale/flashsale/internal/procstat"
)

// The servers section (--only servers) sells the same sale on two
// Temporal servers, interleaved: the dev server the rest of the bench
// uses (`temporal server start-dev`, SQLite in memory) and a
// production-shaped one, a single `temporal-server` process running every
// service on the local PostgreSQL with the project's deployment config
// (deploy/temporal: the config template and the recommended dynamic
// config), built from the module proxy by scripts/cluster.sh. Each side
// has its own worker and API process (built from this checkout), so the
// CPU of each is read from /proc apart; the crowd is this process.

// prodPorts are the production-shaped server's, clear of the dev server
// of the tests (7233), the cluster (74xx) and the side-by-side (75xx).
const (
	prodFrontend    = 7633
	prodMetricsAddr = "127.0.0.1:9631"
	prodDB          = "temporal_lab"
	prodVisDB       = "temporal_lab_visibility"
)

// proc is a process this section started.
type proc struct {
	name string
	cmd  *exec.Cmd
	log  string
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

func (p *proc) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = p.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		_ = p.cmd.Process.Kill()
		<-done
	}
}

// clusterDir is scripts/cluster.sh's state directory (its binaries).
func clusterDir() string {
	if d := os.Getenv("FLASHSALE_CLUSTER_DIR"); d != "" {
		return d
	}
	return "/tmp/flashsale-cluster"
}

func spawn(name, logDir string, env []string, bin string, args ...string) (*proc, error) {
	log := filepath.Join(logDir, name+".log")
	f, err := os.Create(log)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Env, cmd.Stdout, cmd.Stderr = env, f, f
	err = cmd.Start()
	_ = f.Close()
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	return &proc{name: name, cmd: cmd, log: log}, nil
}

func waitUntil(ctx context.Context, what string, limit time.Duration, p *proc, ok func() bool) error {
	deadline := time.Now().Add(limit)
	for !ok() {
		if p != nil && p.cmd.ProcessState != nil {
			return fmt.Errorf("%s exited; see %s", what, p.log)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not ready within %s; see %s", what, limit, p.log)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
	return nil
}

func portOpen(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err == nil {
		_ = c.Close()
	}
	return err == nil
}

// serverSide is one Temporal server with its own worker and API.
type serverSide struct {
	name     string
	temporal int    // the server's pid
	address  string // its frontend
	api      string
	procs    []*proc
	stopTmp  func() error
	metrics  string // the server's Prometheus endpoint, "" if none
	// pprof is each process's /debug/pprof base URL: the worker's and
	// the API's always, the server's where it serves one (prod).
	pprof map[string]string
}

func (s *serverSide) close() {
	for i := len(s.procs) - 1; i >= 0; i-- {
		s.procs[i].stop()
	}
	if s.stopTmp != nil {
		_ = s.stopTmp()
	}
}

func (s *serverSide) pid(name string) int {
	for _, p := range s.procs {
		if p.name == name {
			return p.pid()
		}
	}
	return 0
}

// serverEnv is what both sides' worker and API get.
type serverEnv struct {
	bin, logs string
	base      []string
	secret    map[string]string
}

func newServerEnv(ctx context.Context, b *benchRun) (*serverEnv, error) {
	e := &serverEnv{bin: filepath.Join(clusterDir(), "bin"), secret: map[string]string{}}
	e.logs = filepath.Join(clusterDir(), "logs", "lab-"+b.run)
	if err := os.MkdirAll(e.logs, 0o755); err != nil {
		return nil, err
	}
	for _, tool := range []string{"server", "sql", "temporal"} {
		if _, err := os.Stat(filepath.Join(e.bin, tool)); err != nil {
			b.logf("building the Temporal server and tools (scripts/cluster.sh tools)")
			if out, err := exec.CommandContext(ctx, "scripts/cluster.sh", "tools").CombinedOutput(); err != nil {
				return nil, fmt.Errorf("scripts/cluster.sh tools: %v: %s", err, out)
			}
			break
		}
	}
	// The worker and the API of this checkout, built beside the logs.
	for _, c := range []string{"worker", "api"} {
		b.logf("building ./%s", c)
		if out, err := exec.CommandContext(ctx, "go", "build", "-o", filepath.Join(e.logs, c), "./"+c).CombinedOutput(); err != nil {
			return nil, fmt.Errorf("go build ./%s: %v: %s", c, err, out)
		}
	}
	for _, k := range []string{"WEBHOOK_SECRET", "ADMIN_TOKEN", "BUYER_JWT_SECRET"} {
		raw := make([]byte, 32)
		_, _ = rand.Read(raw)
		e.secret[k] = hex.EncodeToString(raw)
	}
	e.base = os.Environ()
	f, err := os.Open("deploy/flashsale.env")
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "#")
		if line = strings.TrimSpace(line); line != "" {
			e.base = append(e.base, line)
		}
	}
	e.base = append(e.base, "REDIS_ADDR=127.0.0.1:6379", "MYSQL_DSN="+b.cfg.MySQLDSN,
		"PAYMENT_TIMEOUT=15m", "LOG_LEVEL=warn", "REDIS_CLUSTER=false")
	for k, v := range e.secret {
		e.base = append(e.base, k+"="+v)
	}
	return e, sc.Err()
}

// cleanup removes the run's worker and API binaries (100 MB a run); the
// logs stay.
func (e *serverEnv) cleanup() {
	for _, c := range []string{"worker", "api"} {
		_ = os.Remove(filepath.Join(e.logs, c))
	}
}

// startApp starts side's worker and API on temporal, on a task queue of
// their own; the API listens on apiPort, and each serves its metrics and
// profiles (METRICS_PPROF, on for every side alike, as sampling costs a
// little) 1000 (worker) and 1100 (API) ports above it.
func (e *serverEnv) startApp(ctx context.Context, s *serverSide, temporal, queue string, apiPort int, extra ...string) error {
	env := append(append([]string{}, e.base...), "TEMPORAL_ADDRESS="+temporal, "TASK_QUEUE="+queue,
		fmt.Sprintf("HTTP_ADDR=127.0.0.1:%d", apiPort), "LOG_LEVEL=info", "METRICS_PPROF=true")
	env = append(env, extra...)
	if s.pprof == nil {
		s.pprof = map[string]string{}
	}
	metricsAt := func(proc string, port int) []string {
		s.pprof[proc] = fmt.Sprintf("http://127.0.0.1:%d/debug/pprof", port)
		return append(slices.Clip(env), fmt.Sprintf("METRICS_ADDR=127.0.0.1:%d", port))
	}
	w, err := spawn(s.name+"-worker", e.logs, metricsAt("worker", apiPort+1000), filepath.Join(e.logs, "worker"))
	if err != nil {
		return err
	}
	s.procs = append(s.procs, w)
	if err := waitUntil(ctx, s.name+" worker", 90*time.Second, w, func() bool {
		raw, _ := os.ReadFile(w.log)
		return strings.Contains(string(raw), "worker started")
	}); err != nil {
		return err
	}
	a, err := spawn(s.name+"-api", e.logs, metricsAt("api", apiPort+1100), filepath.Join(e.logs, "api"))
	if err != nil {
		return err
	}
	s.procs = append(s.procs, a)
	s.api = fmt.Sprintf("http://127.0.0.1:%d", apiPort)
	return waitUntil(ctx, s.name+" api", 60*time.Second, a, func() bool {
		resp, err := http.Get(s.api + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
}

// startDev is the dev server with the adopted settings, as the bench runs it.
func (e *serverEnv) startDev(ctx context.Context, b *benchRun) (*serverSide, error) {
	t, err := devstack.StartTemporal(ctx, devstack.TemporalOptions{})
	if err != nil {
		return nil, err
	}
	s := &serverSide{name: "dev", temporal: t.PID(), address: t.Address(), stopTmp: t.Stop}
	if err := e.startApp(ctx, s, t.Address(), "lab-"+b.run+"-dev", 7681); err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

// prodSide says how startProd starts a production-shaped side.
type prodSide struct {
	name  string // the side's: its processes', logs' and profiles'
	noApp bool   // the server alone: the caller starts its own workers and APIs
	// postgres sets parameters of the server's two databases (ALTER
	// DATABASE ... SET) before the server connects.
	postgres map[string]string
	// app is added to the worker's and API's environment; env to the
	// server's, over deploy/temporal's (TEMPORAL_DYNAMIC_CONFIG, say).
	app, env []string
}

// startProd is a single temporal-server process, every service, on fresh
// PostgreSQL databases, with deploy/temporal's config and dynamic config
// as side overrides them; its worker and API are started unless side.noApp.
func (e *serverEnv) startProd(ctx context.Context, b *benchRun, side prodSide) (*serverSide, error) {
	root, _ := os.Getwd()
	for _, db := range []string{prodDB, prodVisDB} {
		if out, err := exec.CommandContext(ctx, "psql", "-h", "127.0.0.1", "-U", "postgres", "-d", "postgres", "-Atqc",
			"DROP DATABASE IF EXISTS "+db+" WITH (FORCE)").CombinedOutput(); err != nil {
			return nil, fmt.Errorf("drop %s: %v: %s", db, err, out)
		}
	}
	schema := exec.CommandContext(ctx, "deploy/temporal/setup-schema.sh")
	schema.Env = append(os.Environ(), "SQL_TOOL="+filepath.Join(e.bin, "sql"), "TEMPORAL_SQL_HOST=127.0.0.1",
		"TEMPORAL_SQL_PORT=5432", "TEMPORAL_SQL_USER=postgres", "TEMPORAL_DB="+prodDB, "TEMPORAL_VISIBILITY_DB="+prodVisDB)
	if out, err := schema.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("setup-schema: %v: %s", err, out)
	}
	for _, db := range []string{prodDB, prodVisDB} {
		for k, v := range side.postgres {
			if out, err := exec.CommandContext(ctx, "psql", "-h", "127.0.0.1", "-U", "postgres", "-d", "postgres", "-Atqc",
				fmt.Sprintf("ALTER DATABASE %s SET %s = %s", db, k, v)).CombinedOutput(); err != nil {
				return nil, fmt.Errorf("set %s on %s: %v: %s", k, db, err, out)
			}
		}
	}
	p := prodFrontend
	env := append(os.Environ(),
		"TEMPORAL_BIND_IP=127.0.0.1", "TEMPORAL_NUM_HISTORY_SHARDS=8",
		"TEMPORAL_SQL_HOST=127.0.0.1", "TEMPORAL_SQL_PORT=5432", "TEMPORAL_SQL_USER=postgres",
		"TEMPORAL_DB="+prodDB, "TEMPORAL_VISIBILITY_DB="+prodVisDB,
		fmt.Sprintf("TEMPORAL_FRONTEND_ADDRESS=127.0.0.1:%d", p),
		fmt.Sprintf("TEMPORAL_FRONTEND_GRPC_PORT=%d", p), fmt.Sprintf("TEMPORAL_FRONTEND_MEMBERSHIP_PORT=%d", p-1000),
		fmt.Sprintf("TEMPORAL_FRONTEND_HTTP_PORT=%d", p+10),
		fmt.Sprintf("TEMPORAL_HISTORY_GRPC_PORT=%d", p+1), fmt.Sprintf("TEMPORAL_HISTORY_MEMBERSHIP_PORT=%d", p-999),
		fmt.Sprintf("TEMPORAL_MATCHING_GRPC_PORT=%d", p+2), fmt.Sprintf("TEMPORAL_MATCHING_MEMBERSHIP_PORT=%d", p-998),
		fmt.Sprintf("TEMPORAL_WORKER_GRPC_PORT=%d", p+6), fmt.Sprintf("TEMPORAL_WORKER_MEMBERSHIP_PORT=%d", p-994),
		"TEMPORAL_METRICS_ADDR="+prodMetricsAddr, "TEMPORAL_PPROF_PORT=9731",
		"TEMPORAL_DYNAMIC_CONFIG="+filepath.Join(root, "deploy/temporal/dynamicconfig.yaml"))
	env = append(env, side.env...)
	front := "127.0.0.1:" + strconv.Itoa(p)
	if portOpen(front) {
		return nil, errors.New("port " + front + " is taken: another servers run?")
	}
	srv, err := spawn(side.name+"-temporal", e.logs, env, filepath.Join(e.bin, "server"),
		"--root", "/", "--config", filepath.Join(root, "deploy/temporal/config"), "--env", "flashsale", "--allow-no-auth", "start")
	if err != nil {
		return nil, err
	}
	s := &serverSide{name: side.name, temporal: srv.pid(), address: front, procs: []*proc{srv}, metrics: "http://" + prodMetricsAddr + "/metrics",
		pprof: map[string]string{"temporal": "http://127.0.0.1:9731/debug/pprof"}}
	if err := waitUntil(ctx, "temporal-server", 120*time.Second, srv, func() bool { return portOpen(front) }); err != nil {
		s.close()
		return nil, err
	}
	ns := exec.CommandContext(ctx, "deploy/temporal/setup-namespace.sh")
	ns.Env = append(os.Environ(), "TEMPORAL_CLI="+filepath.Join(e.bin, "temporal"), "TEMPORAL_ADDRESS="+front,
		"TEMPORAL_NAMESPACE=default", "SEARCH_ATTRIBUTES=deploy/temporal/search-attributes", "SETUP_WAIT_SECONDS=120")
	if out, err := ns.CombinedOutput(); err != nil {
		s.close()
		return nil, fmt.Errorf("setup-namespace: %v: %s", err, out)
	}
	if side.noApp {
		return s, nil
	}
	if err := e.startApp(ctx, s, front, "lab-"+b.run+"-"+side.name, 7682, side.app...); err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

// groups are the processes whose CPU a sale is charged, by name; each is
// re-listed at every reading (PostgreSQL's backends come and go).
func (s *serverSide) groups() map[string]func() []int {
	return map[string]func() []int{
		"temporal":     func() []int { return []int{s.temporal} },
		"postgres":     func() []int { return pidsNamed("postgres", "") },
		"worker":       func() []int { return []int{s.pid(s.name + "-worker")} },
		"api":          func() []int { return []int{s.pid(s.name + "-api")} },
		"mariadbd":     func() []int { return pidsNamed("mariadbd", "") },
		"redis-server": func() []int { return pidsNamed("redis-server", ":6379") },
		"crowd":        func() []int { return []int{os.Getpid()} },
	}
}

// pidsNamed lists the processes whose name (comm) is name and whose
// command line holds part.
func pidsNamed(name, part string) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
		if err != nil || strings.TrimSpace(string(comm)) != name {
			continue
		}
		if part != "" {
			cl, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
			if !strings.Contains(string(cl), part) {
				continue
			}
		}
		out = append(out, pid)
	}
	return out
}

// cpuReading is every group's processes' CPU at one moment, by pid.
type cpuReading map[string]map[int]time.Duration

func readCPU(groups map[string]func() []int) cpuReading {
	r := cpuReading{}
	for g, pids := range groups {
		r[g] = map[int]time.Duration{}
		for _, pid := range pids() {
			if d, err := procstat.ProcessCPU(pid); err == nil {
				r[g][pid] = d
			}
		}
	}
	return r
}

// since is each group's CPU seconds from before to r (a process new
// since before counts from zero).
func (r cpuReading) since(before cpuReading) map[string]float64 {
	out := map[string]float64{}
	for g, pids := range r {
		var d time.Duration
		for pid, c := range pids {
			d += c - before[g][pid]
		}
		out[g] = d.Seconds()
	}
	return out
}
