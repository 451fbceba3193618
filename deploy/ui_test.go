//go:build integration

package deploy

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The Web UI's config (deploy/temporal-ui/flashsale.yaml) is what
// scripts/cluster.sh runs the UI server with, a template the UI server
// renders, reading every variable compose gives its UI (the temporalio/ui
// image reads the same names), and it defaults to flashsale's namespace.
// That the rendered file really serves the cluster is the smoke's part
// (scaleout/ui_test.go).
func TestUIConfigShared(t *testing.T) {
	raw, err := os.ReadFile("temporal-ui/flashsale.yaml")
	require.NoError(t, err)
	tpl := string(raw)
	// The UI server renders a config only when this marker is in a comment
	// within its first 1 KB; unrendered, "{{ env ... }}" would be the address.
	require.Contains(t, tpl[:min(len(tpl), 1024)], "# enable-template")

	read := map[string]string{} // variable -> its default in the template
	for _, m := range regexp.MustCompile(`env "([A-Z_]+)"(?: \| default "([^"]*)")?`).FindAllStringSubmatch(tpl, -1) {
		read[m[1]] = m[2]
	}
	for _, k := range []string{"TEMPORAL_ADDRESS", "TEMPORAL_UI_HOST", "TEMPORAL_UI_PORT", "TEMPORAL_DEFAULT_NAMESPACE"} {
		require.Contains(t, read, k, "deploy/temporal-ui/flashsale.yaml")
	}
	var namespace string
	for _, kv := range lines(t, "flashsale.env") {
		if v, ok := strings.CutPrefix(kv, "TEMPORAL_NAMESPACE="); ok {
			namespace = v
		}
	}
	require.NotEmpty(t, namespace)
	require.Equal(t, namespace, read["TEMPORAL_DEFAULT_NAMESPACE"], "the UI opens on flashsale's namespace when nothing sets it (compose does not)")

	ui := env(service(t, composeConfig(t), "temporal-ui"))
	require.Equal(t, "temporal-frontend:7233", ui["TEMPORAL_ADDRESS"])
	for k := range ui {
		require.Contains(t, read, k, "compose gives the UI %s, which deploy/temporal-ui/flashsale.yaml does not read", k)
	}

	cluster, err := os.ReadFile("../scripts/cluster.sh")
	require.NoError(t, err)
	require.Contains(t, string(cluster), `--config "$ROOT/deploy/temporal-ui" --env flashsale start`)
	for _, k := range []string{"TEMPORAL_ADDRESS", "TEMPORAL_UI_HOST", "TEMPORAL_UI_PORT", "TEMPORAL_DEFAULT_NAMESPACE"} {
		require.Contains(t, string(cluster), `"`+k+`=`, "scripts/cluster.sh sets %s for temporal-ui", k)
	}
}
