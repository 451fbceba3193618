//go:build scaleout

package scaleout

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"database/sql"

	_ "github.com/go-sql-driver/mysql"

	"github.com/flashsale/flashsale/internal/app/apptest"
	"github.com/flashsale/flashsale/internal/audit"
	"github.com/flashsale/flashsale/internal/config"
	"github.com/flashsale/flashsale/internal/testenv"
)

// The cluster's secrets and addresses, read from `scripts/cluster.sh env`.
var (
	apiURL        string
	adminToken    string
	webhookSecret string
	buyerSecret   string
	clusterEnv    []string // os.Environ() plus the cluster's variables
	stateDir      string   // where cluster.sh keeps its binaries and logs
	root          string   // the repository
)

func TestMain(m *testing.M) {
	wd, _ := os.Getwd()
	root = filepath.Dir(filepath.Dir(wd)) // lab/scaleout -> the checkout
	stateDir = os.Getenv("FLASHSALE_CLUSTER_DIR")
	if stateDir == "" {
		stateDir = "/tmp/flashsale-cluster"
	}
	// up is idempotent: it starts only what is missing (and builds on
	// first use), so the suite also heals a topology a previous run left
	// with a node down.
	up := exec.Command(filepath.Join(root, "scripts", "cluster.sh"), "up")
	up.Stdout, up.Stderr = os.Stderr, os.Stderr
	if err := up.Run(); err != nil {
		fmt.Fprintf(os.Stderr, "scripts/cluster.sh up: %v\n", err)
		os.Exit(1)
	}
	out, err := exec.Command(filepath.Join(root, "scripts", "cluster.sh"), "env").Output()
	if err != nil {
		fmt.Fprintf(os.Stderr, "scripts/cluster.sh env: %v\n", err)
		os.Exit(1)
	}
	clusterEnv = os.Environ()
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		kv, ok := strings.CutPrefix(sc.Text(), "export ")
		if !ok {
			continue
		}
		k, v, _ := strings.Cut(kv, "=")
		v = strings.Trim(v, "'")
		clusterEnv = append(clusterEnv, k+"="+v)
		_ = os.Setenv(k, v)
		switch k {
		case "API_URL":
			apiURL = v
		case "ADMIN_TOKEN":
			adminToken = v
		case "WEBHOOK_SECRET":
			webhookSecret = v
		case "BUYER_JWT_SECRET":
			buyerSecret = v
		case "TEMPORAL_UI_URL":
			uiURL = v
		}
	}
	if apiURL == "" || uiURL == "" || adminToken == "" || webhookSecret == "" || buyerSecret == "" {
		fmt.Fprintf(os.Stderr, "scripts/cluster.sh env lacks API_URL, TEMPORAL_UI_URL or a secret:\n%s", out)
		os.Exit(1)
	}
	code := m.Run()
	summary.Print(os.Stdout)
	os.Exit(code)
}

// ---- the summary table ----------------------------------------------------

type caseResult struct {
	name       string
	orders     int
	faults     string
	violations int
	oversold   int64
	undersold  int64
	recover    string
	result     string
}

// summary is the suite's table, printed by TestMain after every case.
var summary = testenv.Summary{Title: "scale-out summary", Flags: tabwriter.Debug,
	Columns: []string{"case", "orders", "faults", "violations", "oversold", "undersold", "time to recover", "result"}}

func record(r caseResult) {
	summary.Add(r.name, r.orders, r.faults, r.violations, r.oversold, r.undersold, r.recover, r.result)
}

// ---- the cluster ----------------------------------------------------------

// cluster runs scripts/cluster.sh with args and returns its combined output.
func cluster(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(filepath.Join(root, "scripts", "cluster.sh"), args...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("scripts/cluster.sh %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	t.Logf("scripts/cluster.sh %s:\n%s", strings.Join(args, " "), strings.TrimSpace(string(out)))
	return string(out)
}

// starter runs the cluster's starter binary with the cluster's environment.
func starter(ctx context.Context, args ...string) (string, error) {
	o, e, err := testenv.RunCommand(ctx, clusterEnv, filepath.Join(stateDir, "bin"), "starter", args...)
	if err != nil {
		return string(o), fmt.Errorf("starter %s: %w: %s%s", strings.Join(args, " "), err, o, e)
	}
	return string(o), nil
}

// createSKU defines the SKU and preheats its buckets through the admin API.
// perUser is the SKU's per-buyer limit (the API's default is 1).
func createSKU(t *testing.T, sku string, units, price int64, buckets, perUser int) {
	t.Helper()
	createSKUAt(t, apiURL, sku, units, price, buckets, perUser)
}

// createSKUAt is createSKU through the API at base.
func createSKUAt(t *testing.T, base, sku string, units, price int64, buckets, perUser int) {
	t.Helper()
	var out map[string]any
	body := map[string]any{"total": units, "price": price, "buckets": buckets, "per_user_limit": perUser}
	if err := testenv.CallJSON(http.MethodPut, base+"/api/v1/admin/skus/"+sku, adminToken, body, &out); err != nil {
		t.Fatalf("create sku %s: %v", sku, err)
	}
	if err := testenv.CallJSON(http.MethodPost, base+"/api/v1/admin/skus/"+sku+"/preheat", adminToken, nil, &out); err != nil {
		t.Fatalf("preheat sku %s: %v", sku, err)
	}
	if out["redis_available"] != float64(units) {
		t.Fatalf("preheat %s: %v", sku, out)
	}
}

// deps opens fresh connections for the checker, as `starter check` does.
func deps(ctx context.Context) (audit.Deps, func(), error) {
	cfg, err := config.Load()
	if err != nil {
		return audit.Deps{}, nil, err
	}
	sys, err := apptest.Open(ctx, cfg, nil)
	if err != nil {
		return audit.Deps{}, nil, err
	}
	return sys.AuditDeps(), sys.Close, nil
}

// settle waits until the SKU has no unpaid order and no running order
// workflow and Redis agrees with MySQL, and returns the checker's report
// and how long that took. It gives up after timeout.
func settle(t *testing.T, ctx context.Context, sku string, timeout time.Duration) (audit.Report, time.Duration) {
	t.Helper()
	start := time.Now()
	var rep audit.Report
	var err error
	for {
		var d audit.Deps
		var closeDeps func()
		d, closeDeps, err = deps(ctx)
		if err == nil {
			rep, err = audit.Check(ctx, d, sku)
			closeDeps()
		}
		if err != nil {
			t.Logf("check: %v", err)
		} else if st := rep.SKUs[0]; st.Frozen == 0 && st.PendingUnits == 0 && st.OpenWorkflows == 0 && !st.Redis.Torn && st.Redis.Drift == 0 {
			return rep, time.Since(start)
		}
		if time.Since(start) > timeout {
			if err != nil {
				t.Fatalf("check: %v", err)
			}
			t.Errorf("orders did not settle within %s: %+v", timeout, rep.SKUs)
			return rep, time.Since(start)
		}
		time.Sleep(time.Second)
	}
}

// dbOrders reads the status of every order holding sku from MySQL.
func dbOrders(ctx context.Context, sku string) (map[string]string, error) {
	cfg, err := config.Load()
	if err != nil {
		return nil, err
	}
	db, err := openMySQL(cfg.MySQLDSN)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, `SELECT DISTINCT o.order_id, o.status FROM orders o
		JOIN order_items i ON i.order_id = o.order_id WHERE i.sku_id = ?`, sku)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var id, st string
		if err := rows.Scan(&id, &st); err != nil {
			return nil, err
		}
		out[id] = st
	}
	return out, rows.Err()
}

func openMySQL(dsn string) (*sql.DB, error) { return sql.Open("mysql", dsn) }
