package deploy

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

type ruleFile struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []struct {
			Alert       string            `yaml:"alert"`
			Record      string            `yaml:"record"`
			Expr        string            `yaml:"expr"`
			Annotations map[string]string `yaml:"annotations"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

func readYAML(t *testing.T, path string, v any) {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, yaml.Unmarshal(raw, v), path)
}

// Every alert of deploy/prometheus/alerts.rules.yml has its section in
// docs/runbook.md, a runbook_url naming it, and promtool cases in
// alerts_test.yml where it fires and where it stays silent.
func TestEveryAlertHasARunbookAndTests(t *testing.T) {
	var rules ruleFile
	readYAML(t, "prometheus/alerts.rules.yml", &rules)
	var tests struct {
		Tests []struct {
			Name      string `yaml:"name"`
			AlertTest []struct {
				Alertname string `yaml:"alertname"`
				ExpAlerts []any  `yaml:"exp_alerts"`
			} `yaml:"alert_rule_test"`
		} `yaml:"tests"`
	}
	readYAML(t, "prometheus/alerts_test.yml", &tests)
	fires, silent := map[string]bool{}, map[string]bool{}
	for _, tc := range tests.Tests {
		for _, a := range tc.AlertTest {
			if len(a.ExpAlerts) > 0 {
				fires[a.Alertname] = true
			} else {
				silent[a.Alertname] = true
			}
		}
	}
	raw, err := os.ReadFile("../docs/runbook.md")
	require.NoError(t, err)
	sections := map[string]string{}
	for _, part := range strings.Split(string(raw), "\n## ")[1:] {
		title, body, _ := strings.Cut(part, "\n")
		sections[strings.TrimSpace(title)] = body
	}
	alerts := 0
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				continue
			}
			alerts++
			body, ok := sections[r.Alert]
			require.True(t, ok, "docs/runbook.md has no section ## %s", r.Alert)
			require.Contains(t, body, "**Means:**", r.Alert)
			require.Contains(t, body, "**Do:**", r.Alert)
			require.Equal(t, "docs/runbook.md#"+strings.ToLower(r.Alert), r.Annotations["runbook_url"], r.Alert)
			require.True(t, fires[r.Alert], "alerts_test.yml has no case where %s fires", r.Alert)
			require.True(t, silent[r.Alert], "alerts_test.yml has no case where %s stays silent", r.Alert)
		}
	}
	require.GreaterOrEqual(t, alerts, 10)
	for title := range sections {
		found := false
		for _, g := range rules.Groups {
			for _, r := range g.Rules {
				found = found || r.Alert == title
			}
		}
		require.True(t, found, "docs/runbook.md's section %s names no alert", title)
	}
}

// The grafana dashboard reads only recorded series the rules define.
func TestDashboardReadsDefinedRecordings(t *testing.T) {
	var rec ruleFile
	readYAML(t, "prometheus/recording.rules.yml", &rec)
	defined := map[string]bool{}
	for _, g := range rec.Groups {
		for _, r := range g.Rules {
			defined[r.Record] = true
		}
	}
	raw, err := os.ReadFile("grafana/dashboards/flashsale.json")
	require.NoError(t, err)
	for _, name := range regexp.MustCompile(`[a-z_]+:[a-z0-9_]+:[a-z0-9_]+`).FindAllString(string(raw), -1) {
		require.True(t, defined[name], "the dashboard reads %s, which no recording rule defines", name)
	}
}

// promtool checks the config and the rules and runs their tests: $PROMTOOL
// (scripts/test.sh sets it to the promtool of the Prometheus compose
// deploys, scripts/promtool.sh), else the one on PATH (Debian's 2.42; the
// fixtures pass on both). A missing one fails, never skips.
func TestPromtool(t *testing.T) {
	bin := os.Getenv("PROMTOOL")
	if bin == "" {
		var err error
		bin, err = exec.LookPath("promtool")
		require.NoError(t, err, "promtool is needed (scripts/promtool.sh, or apt-get install prometheus)")
	}
	for _, args := range [][]string{
		{"check", "config", "prometheus.yml"},
		{"check", "rules", "recording.rules.yml", "alerts.rules.yml"},
		{"test", "rules", "recording_test.yml", "alerts_test.yml"},
	} {
		cmd := exec.Command(bin, args...)
		cmd.Dir = "prometheus"
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "promtool %s: %s", strings.Join(args, " "), out)
	}
}
