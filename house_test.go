package flashsale_test

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// The product's module requires nothing only the lab or the demo's embedded
// MySQL needs: they are modules of their own (lab/, internal/devstack/mysqld),
// so the product's go.mod, and every binary built from it, stays what runs a
// sale. And no product process links the test helpers.
func TestProductModuleHoldsNoLab(t *testing.T) {
	cmd := exec.Command("go", "mod", "graph")
	cmd.Env = append(os.Environ(), "GOWORK=off")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go mod graph: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "go.temporal.io/sdk@") {
		t.Fatalf("go mod graph listed no Temporal SDK: this test no longer proves anything")
	}
	for _, lab := range []string{"github.com/dolthub/go-mysql-server@", "github.com/dolthub/vitess@",
		"github.com/tetratelabs/wazero@", "gonum.org/v1/plot@", "github.com/schollz/progressbar", "github.com/sirupsen/logrus@"} {
		if strings.Contains(string(out), lab) {
			t.Errorf("the product's module graph lists %s", strings.TrimSuffix(lab, "@"))
		}
	}
	deps, err := exec.Command("go", "list", "-deps", "./worker", "./api", "./starter").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, deps)
	}
	for _, p := range strings.Fields(string(deps)) {
		if strings.HasSuffix(p, "/flashsale/internal/testenv") || strings.Contains(p, "/flashsale/lab/") {
			t.Errorf("a product process links %s", p)
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
