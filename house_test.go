package flashsale_test

import (
	"os/exec"
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
