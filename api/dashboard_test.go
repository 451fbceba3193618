//go:build integration

package main

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// The Grafana dashboard as far as its queries and labels go; the rest of
// its shape is checked against Grafana's schema in deploy's
// TestDashboardMatchesGrafanaSchema.
type grafanaDashboard struct {
	Panels []struct {
		Type        string `json:"type"`
		Title       string `json:"title"`
		Description string `json:"description"`
		Datasource  struct {
			UID string `json:"uid"`
		} `json:"datasource"`
		FieldConfig struct {
			Defaults struct {
				Unit string `json:"unit"`
			} `json:"defaults"`
		} `json:"fieldConfig"`
		Targets []struct {
			Expr       string `json:"expr"`
			Datasource struct {
				UID string `json:"uid"`
			} `json:"datasource"`
		} `json:"targets"`
	} `json:"panels"`
	Templating struct {
		List []struct {
			Name       string          `json:"name"`
			Type       string          `json:"type"`
			Query      json.RawMessage `json:"query"`
			Definition string          `json:"definition"`
		} `json:"list"`
	} `json:"templating"`
}

var (
	// A selector: a series name (recorded names have colons) and its
	// label matchers.
	selectorRE = regexp.MustCompile(`([a-zA-Z_:][a-zA-Z0-9_:]*)\s*(\{[^}]*\})?`)
	matcherRE  = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)\s*"`)
	variableRE = regexp.MustCompile(`\$\{?([a-zA-Z_][a-zA-Z0-9_]*)`)
	// Names this project or its libraries export, and recorded ones.
	seriesRE = regexp.MustCompile(`^(?:(?:flashsale|temporal|go_sql)_|[a-z_]+:)`)
	byRE     = regexp.MustCompile(`\b(?:by|without)\s*\(([^)]*)\)`)
)

// recordings maps each recorded series of deploy/prometheus's recording
// rules to its expression.
func recordings(t *testing.T) map[string]string {
	t.Helper()
	raw, err := os.ReadFile("../deploy/prometheus/recording.rules.yml")
	require.NoError(t, err)
	var rules struct {
		Groups []struct {
			Rules []struct {
				Record string `yaml:"record"`
				Expr   string `yaml:"expr"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	require.NoError(t, yaml.Unmarshal(raw, &rules))
	out := map[string]string{}
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			out[r.Record] = r.Expr
		}
	}
	return out
}

// series lists the series an expression reads with the label names its
// matchers use (`by (...)` groupings and quoted strings left out).
func series(expr string) map[string][]string {
	expr = byRE.ReplaceAllString(expr, "")
	out := map[string][]string{}
	for _, m := range selectorRE.FindAllStringSubmatch(expr, -1) {
		name := m[1]
		if !seriesRE.MatchString(name) {
			continue
		}
		var labels []string
		for _, l := range matcherRE.FindAllStringSubmatch(m[2], -1) {
			labels = append(labels, l[1])
		}
		out[name] = append(out[name], labels...)
	}
	return out
}

// checkDashboard holds the dashboard's queries to the real processes'
// scrapes: every panel has a unit and a description and reads the
// datasource variable; every variable a query uses is defined, and the
// datasource, job, instance and sku variables are defined and used; every
// series a query or a variable reads is exported by the API or the worker
// (a recorded series through its rule's expression) with every label its
// matchers name (job and instance are Prometheus's own).
func checkDashboard(t *testing.T, scrapes ...map[string]*dto.MetricFamily) {
	t.Helper()
	raw, err := os.ReadFile("../deploy/grafana/dashboards/flashsale.json")
	require.NoError(t, err)
	var dash grafanaDashboard
	require.NoError(t, json.Unmarshal(raw, &dash))

	// What the scrapes show: each name PromQL sees and its label names.
	exported := map[string]map[string]bool{}
	for _, fams := range scrapes {
		for name, f := range fams {
			labels := map[string]bool{"job": true, "instance": true}
			for _, m := range f.GetMetric() {
				for _, l := range m.GetLabel() {
					labels[l.GetName()] = true
				}
			}
			names := []string{name}
			switch f.GetType() {
			case dto.MetricType_HISTOGRAM:
				names = []string{name + "_bucket", name + "_sum", name + "_count"}
			case dto.MetricType_SUMMARY:
				names = append(names, name+"_sum", name+"_count")
			}
			for _, n := range names {
				if exported[n] == nil {
					exported[n] = map[string]bool{}
				}
				for l := range labels {
					exported[n][l] = true
				}
			}
		}
	}
	recorded := recordings(t)
	var problems []string
	// readable checks a series (recorded ones through their rule) and the
	// labels matched on it.
	var readable func(where, name string, labels []string)
	readable = func(where, name string, labels []string) {
		if expr, ok := recorded[name]; ok {
			kept := map[string]bool{}
			for _, by := range byRE.FindAllStringSubmatch(expr, -1) {
				for _, l := range strings.Split(by[1], ",") {
					kept[strings.TrimSpace(l)] = true
				}
			}
			for _, l := range labels {
				if !kept[l] {
					problems = append(problems, where+": "+name+" has no label "+l)
				}
			}
			for n, ls := range series(expr) {
				readable(where+" via "+name, n, ls)
			}
			return
		}
		have, ok := exported[name]
		if !ok {
			problems = append(problems, where+": nobody exports "+name)
			return
		}
		for _, l := range labels {
			if !have[l] {
				problems = append(problems, where+": "+name+" has no label "+l)
			}
		}
	}

	defined := map[string]bool{}
	for _, v := range dash.Templating.List {
		defined[v.Name] = true
	}
	for _, name := range []string{"datasource", "job", "instance", "sku"} {
		require.True(t, defined[name], "the dashboard defines the variable %s", name)
	}
	used := map[string]bool{}
	uses := func(where, expr string) {
		for _, m := range variableRE.FindAllStringSubmatch(expr, -1) {
			if strings.HasPrefix(m[1], "__") {
				continue // Grafana's own: $__rate_interval, $__range
			}
			used[m[1]] = true
			if !defined[m[1]] {
				problems = append(problems, where+": uses undefined $"+m[1])
			}
		}
	}
	for _, v := range dash.Templating.List {
		if v.Type != "query" {
			continue
		}
		var q struct {
			Query string `json:"query"`
		}
		require.NoError(t, json.Unmarshal(v.Query, &q), v.Name)
		require.Equal(t, v.Definition, q.Query, "variable %s", v.Name)
		where := "variable " + v.Name
		uses(where, q.Query)
		// label_values(series{...}, label): the series must carry the label.
		m := regexp.MustCompile(`^label_values\((.+),\s*([a-zA-Z_]+)\)$`).FindStringSubmatch(q.Query)
		require.NotNil(t, m, "%s: a label_values query", where)
		for name, labels := range series(m[1]) {
			readable(where, name, append(labels, m[2]))
		}
	}

	exprs := 0
	for _, p := range dash.Panels {
		if p.Type == "row" {
			continue
		}
		where := "panel " + p.Title
		if strings.TrimSpace(p.Description) == "" {
			problems = append(problems, where+": no description")
		}
		if p.FieldConfig.Defaults.Unit == "" {
			problems = append(problems, where+": no unit")
		}
		if p.Datasource.UID != "${datasource}" {
			problems = append(problems, where+": datasource is not ${datasource}")
		}
		if len(p.Targets) == 0 {
			problems = append(problems, where+": no query")
		}
		for _, tg := range p.Targets {
			if tg.Datasource.UID != "${datasource}" {
				problems = append(problems, where+": a query's datasource is not ${datasource}")
			}
			exprs++
			uses(where, tg.Expr)
			found := series(tg.Expr)
			if len(found) == 0 {
				problems = append(problems, where+": reads no series of ours: "+tg.Expr)
			}
			for name, labels := range found {
				readable(where, name, labels)
			}
		}
	}
	require.Greater(t, exprs, 10, "the dashboard has its panels")
	for _, name := range []string{"job", "instance", "sku"} {
		if !used[name] {
			problems = append(problems, "no query uses $"+name)
		}
	}
	slices.Sort(problems)
	problems = slices.Compact(problems)
	if len(problems) > 0 {
		var all []string
		for n := range exported {
			all = append(all, n)
		}
		slices.Sort(all)
		t.Fatalf("the dashboard does not match the scrapes:\n%s\nexported: %s", strings.Join(problems, "\n"), strings.Join(all, " "))
	}
}
