package deploy

import (
	"encoding/json"
	"errors"
	"os"
	"testing"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/cog/plugins"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/stretchr/testify/require"
)

// Grafana itself is AGPL and is not built or run here, so the dashboard is
// checked against Grafana's dashboard schema instead: the types the
// grafana-foundation-sdk (Apache-2.0) generates from Grafana's own schema
// (the dashboard kind and every panel plugin's options and field config).
// Its strict decoding refuses an unknown field, a wrong type or a missing
// required field anywhere in the document, panels' options included.
func validDashboard(raw []byte) error {
	plugins.RegisterDefaultPlugins()
	// The classic dashboard model (schemaVersion 42) is what Grafana's file
	// provisioning loads; v2 is a new resource format.
	//lint:ignore SA1019 the provisioned file is the classic model
	var d dashboard.Dashboard
	if err := noBuildErrors(d.UnmarshalJSONStrict(raw)); err != nil {
		return err
	}
	return noBuildErrors(d.Validate())
}

// noBuildErrors: the SDK returns its error list typed, so an empty list is
// a non-nil error.
func noBuildErrors(err error) error {
	var list cog.BuildErrors
	if errors.As(err, &list) && len(list) == 0 {
		return nil
	}
	return err
}

func TestDashboardMatchesGrafanaSchema(t *testing.T) {
	raw, err := os.ReadFile("grafana/dashboards/flashsale.json")
	require.NoError(t, err)
	require.NoError(t, validDashboard(raw))

	// The check is not blind: each of these breaks the dashboard the way a
	// hand edit could, and the schema refuses it.
	breaks := []struct {
		name, want string
		breakIt    func(d map[string]any)
	}{
		{"a misspelt panel field", "unexpected field 'descripton'", func(d map[string]any) {
			p := panel(d, 1)
			p["descripton"] = p["description"]
		}},
		{"a grid position that is a string", "panels[1].gridPos.w", func(d map[string]any) {
			panel(d, 1)["gridPos"].(map[string]any)["w"] = "eight"
		}},
		{"time series options without a legend", "panels[1].options.legend: required", func(d map[string]any) {
			delete(panel(d, 1)["options"].(map[string]any), "legend")
		}},
		{"no schemaVersion", "schemaVersion: required", func(d map[string]any) {
			delete(d, "schemaVersion")
		}},
		{"a variable without a name", "templating.list[1].name: required", func(d map[string]any) {
			vars := d["templating"].(map[string]any)["list"].([]any)
			delete(vars[1].(map[string]any), "name")
		}},
		{"a target that is not an object", "panels[1].targets[0]", func(d map[string]any) {
			panel(d, 1)["targets"] = []any{"sum(up)"}
		}},
	}
	for _, b := range breaks {
		var d map[string]any
		require.NoError(t, json.Unmarshal(raw, &d))
		b.breakIt(d)
		bad, err := json.Marshal(d)
		require.NoError(t, err)
		err = validDashboard(bad)
		require.Error(t, err, b.name)
		require.Contains(t, err.Error(), b.want, b.name)
	}
}

func panel(d map[string]any, i int) map[string]any {
	return d["panels"].([]any)[i].(map[string]any)
}
