//go:build faults

package faults

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flashsale/flashsale/internal/app/apptest"
	"github.com/flashsale/flashsale/internal/audit"
	"github.com/flashsale/flashsale/internal/config"
	"github.com/flashsale/flashsale/internal/devstack"
	"github.com/flashsale/flashsale/internal/testenv"
)

const (
	webhookSecret = "whsec-faults-0123456789abcdef"
	adminToken    = "admin-faults-0123456789abcdef"
	buyerSecret   = "buyer-faults-0123456789abcdef-0123456789"
	// paymentTimeout is short so expiries (compensation) happen during the
	// sale, not after it.
	paymentTimeout = 5 * time.Second
)

var bin string // directory holding the built worker, api and starter

func TestMain(m *testing.M) {
	// The faults tag compiles the worker's fault injectors in (e.g.
	// worker/lostreply_faults.go); production builds have none.
	os.Exit(testenv.MainWithCommands(func() int {
		stopLoad := loadCPUs()
		code := m.Run()
		stopLoad()
		summary.Title += loadNote
		summary.Print(os.Stdout)
		return code
	}, &bin, "faults", "../../worker", "../../api", "../../starter"))
}

// cpuLoadEnv asks for that many busy-loop processes for the whole run
// (scripts/faults.sh --loaded sets it to the number of cores): the suite
// must hold on a machine busy with something else, where every timeout is
// closer and every process slower, not only on an idle one.
const cpuLoadEnv = "FAULTS_CPU_LOAD"

// loadCPUs starts the busy loops cpuLoadEnv asks for and returns their
// stop. They die with the test process too (Pdeathsig), so a crashed run
// leaves no load behind.
func loadCPUs() (stop func()) {
	n, _ := strconv.Atoi(os.Getenv(cpuLoadEnv))
	var procs []*exec.Cmd
	for range n {
		cmd := exec.Command("sh", "-c", "while :; do :; done")
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			fmt.Fprintf(os.Stderr, "start cpu load: %v\n", err)
			os.Exit(1)
		}
		procs = append(procs, cmd)
	}
	if n > 0 {
		fmt.Printf("cpu load: %d busy-loop processes for the whole run\n", n)
		loadNote = fmt.Sprintf(" (with %d busy-loop processes loading the cores)", n)
	}
	return func() {
		for _, p := range procs {
			_ = p.Process.Kill()
			_ = p.Wait()
		}
	}
}

// loadNote is printed with the summary when the run was loaded.
var loadNote string

// stackOptions chooses the MySQL server of a stack and the worker's extra
// environment.
type stackOptions struct {
	// mysqlServer is a DSN of the server to create the case's database on;
	// empty means the shared MariaDB (testenv).
	mysqlServer string
	// workerEnv is added to the worker's environment only, e.g. a fault
	// injector's setting (FLASHSALE_FAULT_LOSE_REPLY).
	workerEnv []string
}

// stack is one private flashsale deployment: its own Redis and Temporal
// dev server (on a SQLite file, so it survives a restart), a fresh MySQL
// database, a unique task queue, and worker and API processes.
type stack struct {
	t        *testing.T
	id       string
	redis    *redisServer
	temporal *devstack.Temporal
	tPort    int
	tUIPort  int
	tDBFile  string
	dsn      string
	apiAddr  string
	env      []string
	workers  []*proc
	apis     []*proc
	logs     map[string]*testenv.Buffer

	// workerEnv is stackOptions.workerEnv, kept for worker restarts.
	workerEnv []string
	// db is the stack's database for the suite's own queries; the pool
	// reconnects after a MariaDB restart.
	db *sql.DB
}

func newStack(t *testing.T, opts stackOptions) *stack {
	t.Helper()
	s := &stack{t: t, id: testenv.UniqueID(t), logs: map[string]*testenv.Buffer{}, workerEnv: opts.workerEnv}
	s.redis = startRedis(t)

	server := opts.mysqlServer
	if server == "" {
		server = os.Getenv("MYSQL_DSN")
		if server == "" {
			server = "root@tcp(127.0.0.1:3306)/?parseTime=true"
		}
	}
	s.dsn = freshDatabase(t, server, "flashsale_faults_"+s.id)
	db, err := sql.Open("mysql", s.dsn)
	if err != nil {
		t.Fatalf("open mysql: %v", err)
	}
	t.Cleanup(func() { _ = db.Close() })
	s.db = db

	s.tPort, s.tUIPort = testenv.FreePort(t), testenv.FreePort(t)
	s.tDBFile = filepath.Join(t.TempDir(), "temporal.db")
	s.startTemporal()
	t.Cleanup(func() {
		for _, p := range append(s.apis, s.workers...) {
			p.stop(10 * time.Second)
		}
		if s.temporal != nil {
			_ = s.temporal.Stop()
		}
		if t.Failed() {
			for name, l := range s.logs {
				t.Logf("%s log (tail):\n%s", name, l.Tail(40))
			}
		}
	})

	s.apiAddr = fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	s.env = append(os.Environ(),
		"MYSQL_DSN="+s.dsn,
		"REDIS_ADDR="+s.redis.addr(),
		"TEMPORAL_ADDRESS="+s.temporal.Address(),
		"TEMPORAL_NAMESPACE=default",
		"TASK_QUEUE=faults-"+s.id,
		"PAYMENT_TIMEOUT="+paymentTimeout.String(),
		"HTTP_ADDR="+s.apiAddr,
		"WEBHOOK_SECRET="+webhookSecret,
		"ADMIN_TOKEN="+adminToken,
		"BUYER_JWT_SECRET="+buyerSecret,
	)
	s.startWorker()
	s.startAPI()
	return s
}

func (s *stack) startTemporal() {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	tp, err := devstack.StartTemporal(ctx, devstack.TemporalOptions{Port: s.tPort, UIPort: s.tUIPort, DBFile: s.tDBFile})
	if err != nil {
		s.t.Fatalf("private temporal: %v", err)
	}
	s.temporal = tp
}

// restartTemporal stops the dev server and starts it again on the same
// ports and database file: every workflow, timer and task survives.
func (s *stack) restartTemporal(down time.Duration) {
	s.t.Helper()
	if err := s.temporal.Stop(); err != nil {
		s.t.Logf("stop temporal: %v", err)
	}
	time.Sleep(down)
	s.startTemporal()
}

func (s *stack) logBuffer(name string) *testenv.Buffer {
	l := s.logs[name]
	if l == nil {
		l = &testenv.Buffer{}
		s.logs[name] = l
	}
	return l
}

func (s *stack) startWorker() {
	s.t.Helper()
	env := append(slices.Clip(s.env), s.workerEnv...)
	p, err := startProc("worker", env, s.logBuffer("worker"), filepath.Join(bin, "worker"))
	if err != nil {
		s.t.Fatal(err)
	}
	s.workers = append(s.workers, p)
}

func (s *stack) worker() *proc { return s.workers[len(s.workers)-1] }

func (s *stack) api() *proc { return s.apis[len(s.apis)-1] }

// startAPI starts the API and waits until /readyz answers.
func (s *stack) startAPI() {
	s.t.Helper()
	p, err := startProc("api", s.env, s.logBuffer("api"), filepath.Join(bin, "api"))
	if err != nil {
		s.t.Fatal(err)
	}
	s.apis = append(s.apis, p)
	ok := waitFor(context.Background(), 60*time.Second, func() bool {
		if p.exited() {
			return true
		}
		resp, err := http.Get(s.baseURL() + "/readyz")
		if err != nil {
			return false
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	if !ok || p.exited() {
		s.t.Fatalf("api did not become ready:\n%s", s.logBuffer("api").Tail(20))
	}
}

func (s *stack) baseURL() string { return "http://" + s.apiAddr }

// admin calls an admin endpoint and decodes the answer; a failure ends
// the test.
func (s *stack) admin(method, path string, body any) map[string]any {
	s.t.Helper()
	var out map[string]any
	if err := s.adminCall(method, path, body, &out); err != nil {
		s.t.Fatalf("%s %s: %v", method, path, err)
	}
	return out
}

// adminCall calls an admin endpoint and decodes the answer into out. Unlike
// admin it returns its error, so it may run off the test goroutine.
func (s *stack) adminCall(method, path string, body, out any) error {
	return testenv.CallJSON(method, s.baseURL()+path, adminToken, body, out)
}

// createSKU defines the SKU and preheats its buckets through the admin API.
func (s *stack) createSKU(sku string, units int64, price int64, buckets int) {
	s.t.Helper()
	s.admin(http.MethodPut, "/api/v1/admin/skus/"+sku, map[string]any{"total": units, "price": price, "buckets": buckets})
	out := s.admin(http.MethodPost, "/api/v1/admin/skus/"+sku+"/preheat", nil)
	if out["redis_available"] != float64(units) {
		s.t.Fatalf("preheat %s: %v", sku, out)
	}
}

// starter runs the starter CLI with the stack's environment.
func (s *stack) starter(ctx context.Context, args ...string) (string, error) {
	o, e, err := testenv.RunCommand(ctx, s.env, bin, "starter", args...)
	if err != nil {
		return string(o), fmt.Errorf("starter %s: %w: %s", strings.Join(args, " "), err, e)
	}
	return string(o), nil
}

// deps opens fresh connections for the checker (the services may have been
// restarted since the stack started), as the starter's check command does.
func (s *stack) deps(ctx context.Context) (audit.Deps, func(), error) {
	sys, err := apptest.Open(ctx, config.Config{
		TemporalAddress: s.temporal.Address(), TemporalNamespace: "default",
		RedisAddr: s.redis.addr(), MySQLDSN: s.dsn,
	}, nil)
	if err != nil {
		return audit.Deps{}, nil, err
	}
	return sys.AuditDeps(), sys.Close, nil
}

// settleAndCheck waits until the SKU has no unpaid order and no running
// order workflow, then returns the checker's report. It gives up after
// timeout and returns the last report.
func (s *stack) settleAndCheck(ctx context.Context, sku string, timeout time.Duration) audit.Report {
	s.t.Helper()
	deps, closeDeps, err := s.deps(ctx)
	if err != nil {
		s.t.Fatalf("checker deps: %v", err)
	}
	defer closeDeps()
	var rep audit.Report
	deadline := time.Now().Add(timeout)
	for {
		rep, err = audit.Check(ctx, deps, sku)
		if err != nil {
			s.t.Logf("check: %v", err)
		} else if st := rep.SKUs[0]; st.Frozen == 0 && st.PendingUnits == 0 && st.OpenWorkflows == 0 && !st.Redis.Torn && st.Redis.Drift == 0 {
			return rep
		}
		if time.Now().After(deadline) {
			if err != nil {
				s.t.Fatalf("check: %v", err)
			}
			s.t.Errorf("orders did not settle within %s: %+v", timeout, rep.SKUs)
			return rep
		}
		time.Sleep(time.Second)
	}
}

// orderRow is an order as MySQL has it.
type orderRow struct {
	Status   string
	Captured int
	Refunds  int
}

// dbOrders reads every order of the stack's database with its payments.
func (s *stack) dbOrders(ctx context.Context) (map[string]orderRow, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT o.order_id, o.status,
		COALESCE(SUM(p.status = 'CAPTURED'), 0), COALESCE(SUM(p.status = 'REFUND_REQUIRED'), 0)
		FROM orders o LEFT JOIN payments p ON p.order_id = o.order_id GROUP BY o.order_id, o.status`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]orderRow{}
	for rows.Next() {
		var id string
		var r orderRow
		if err := rows.Scan(&id, &r.Status, &r.Captured, &r.Refunds); err != nil {
			return nil, err
		}
		out[id] = r
	}
	return out, rows.Err()
}

// reconcileNow runs one reconciliation through the starter, the way an
// operator does after a Redis loss.
func (s *stack) reconcileNow(ctx context.Context, sku string, settle time.Duration) (string, error) {
	return s.starter(ctx, "reconcile", "now", "--sku", sku, "--settle", settle.String())
}
