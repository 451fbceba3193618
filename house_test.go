package flashsale_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// The product's processes (the worker, the API, and the starter as the
// production image builds it, -tags nodemo) link nothing of the tooling
// (internal/tooling: embedded dev services, demo, load generator, bench)
// and nothing of the test helpers: the image ships what runs a sale.
func TestProductLinksNoTooling(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-tags", "nodemo", "./worker", "./api", "./starter").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 50 {
		t.Fatalf("go list listed %d packages; expected the processes' whole dependency graph", len(deps))
	}
	for _, p := range deps {
		if strings.Contains(p, "/flashsale/internal/tooling/") || strings.HasSuffix(p, "/flashsale/internal/testenv") {
			t.Errorf("a product process links %s", p)
		}
	}
}

// The starter as `go run ./starter` builds it, demo and bench included,
// links no go-mysql-server: the demo runs it as a process of its own
// (internal/tooling/devstack/mysqld), so the init of its ICU regex package
// (a second of CPU) is not paid by every CLI command. starter's
// TestStartupInit runs the binary and reads its package inits.
func TestStarterLinksNoEmbeddedMySQL(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "./starter").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if !slices.Contains(deps, "github.com/flashsale/flashsale/internal/tooling/devstack") {
		t.Fatalf("the starter no longer links devstack: this test no longer proves anything")
	}
	for _, p := range deps {
		if strings.HasPrefix(p, "github.com/dolthub/") || strings.HasPrefix(p, "github.com/tetratelabs/wazero") {
			t.Errorf("the starter links %s", p)
		}
	}
}

// The workflows link no store: they run their activities by the names of
// activities/contract and speak the house's vocabulary, so nothing of
// Redis, MySQL or the worker's configuration reaches deterministic code,
// and a store's change never rebuilds the workflows.
func TestWorkflowsLinkNoStore(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "./workflows").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if !slices.Contains(deps, "go.temporal.io/sdk/workflow") {
		t.Fatalf("go list did not list the workflows' dependencies: this test no longer proves anything")
	}
	allowed := []string{
		"github.com/flashsale/flashsale",
		"github.com/flashsale/flashsale/activities/contract",
		"github.com/flashsale/flashsale/workflows",
	}
	for _, p := range deps {
		if (p == "github.com/flashsale/flashsale" || strings.HasPrefix(p, "github.com/flashsale/flashsale/")) && !slices.Contains(allowed, p) {
			t.Errorf("workflows links %s; it may link only %v", p, allowed)
		}
		if strings.HasPrefix(p, "github.com/redis/") || strings.Contains(p, "mysql") || strings.HasPrefix(p, "gorm.io/") {
			t.Errorf("workflows links the store driver %s", p)
		}
	}
}
