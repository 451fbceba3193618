package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The servers section's setting A/B (--only servers --server-ab SPEC):
// the production-shaped sale under variants of the deployed Temporal
// config, interleaved round by round (base, variant 1, variant 2, base,
// ...). Each round starts its variant's temporal-server on fresh
// PostgreSQL databases (a history shard count is fixed when a cluster is
// created), with its own worker and API, sells the sale, and stops.
//
// Eager workflow start is not among the levers: the SDK (v1.51.0) asks for
// an eager task only in ExecuteWorkflow (internal_workflow_client.go),
// never in UpdateWithStartWorkflow, which is how every order starts
// (internal/orders/place.go); where the API and a worker share a process
// it would still not apply.

// serverVariant is one side of the A/B: settings over the deployed
// config.
type serverVariant struct {
	Name string `json:"name"`
	// Env overrides the config template's (deploy/temporal/config).
	Env []string `json:"env,omitempty"`
	// Dynamic overrides keys of deploy/temporal/dynamicconfig.yaml.
	Dynamic map[string]string `json:"dynamic,omitempty"`
	// Postgres sets parameters of the server's two databases (ALTER
	// DATABASE ... SET) before the server connects.
	Postgres map[string]string `json:"postgres,omitempty"`
	// App is the environment of the variant's worker and API: the edge's
	// own levers, measured on the same server.
	App []string `json:"app,omitempty"`
}

// serverSettings are the A/B's settings by the name SPEC uses: an
// environment variable of the config template or a dynamic config key.
//
// pgcommit=0 (synchronous_commit off: a commit does not wait for its WAL
// flush) is a diagnostic, never a setting to deploy: it tells whether the
// store's commit flush is what a placement waits on, and it loses the
// last commits of a crashed PostgreSQL, which a durable order cannot.
//
// captarget (ms; 0 turns the cap off) and retrymax (s) are the API's:
// ADMISSION_TARGET_LATENCY and ADMISSION_MAX_RETRY_AFTER.
var serverSettings = map[string]struct{ env, dynamic, postgres, app, unit string }{
	"shards":    {env: "TEMPORAL_NUM_HISTORY_SHARDS"},
	"maxconns":  {env: "TEMPORAL_SQL_MAX_CONNS"},
	"cache":     {dynamic: "history.hostLevelCacheMaxSize"},
	"shardio":   {dynamic: "history.shardIOConcurrency"},
	"pgcommit":  {postgres: "synchronous_commit"},
	"captarget": {app: "ADMISSION_TARGET_LATENCY", unit: "ms"},
	"retrymax":  {app: "ADMISSION_MAX_RETRY_AFTER", unit: "s"},
}

// parseServerAB reads SPEC: variants separated by commas, each one or more
// setting=value joined by '+' (shards=16+maxconns=20); the deployed config
// ("base") comes first.
func parseServerAB(spec string) ([]serverVariant, error) {
	out := []serverVariant{{Name: "base"}}
	for _, v := range strings.Split(spec, ",") {
		if v = strings.TrimSpace(v); v == "" {
			continue
		}
		sv := serverVariant{Name: v}
		for _, kv := range strings.Split(v, "+") {
			k, val, ok := strings.Cut(kv, "=")
			s, known := serverSettings[k]
			if s.postgres != "" {
				if val != "0" && val != "1" {
					return nil, invalid("--server-ab: %q: %s is 0 (off) or 1 (on)", kv, k)
				}
				if sv.Postgres == nil {
					sv.Postgres = map[string]string{}
				}
				sv.Postgres[s.postgres] = map[string]string{"0": "off", "1": "on"}[val]
				continue
			}
			if s.app != "" {
				n, err := strconv.Atoi(val)
				if err != nil || n < 0 || (n == 0 && s.unit != "ms") {
					return nil, invalid("--server-ab: %q: %s is a whole number of %s", kv, k, s.unit)
				}
				if n == 0 {
					val = "off"
				} else {
					val += s.unit
				}
				sv.App = append(sv.App, s.app+"="+val)
				continue
			}
			if n, err := strconv.Atoi(val); !ok || !known || err != nil || n < 1 {
				return nil, invalid("--server-ab: %q is not setting=positive number (settings: cache, maxconns, shardio, shards; pgcommit=0|1; captarget=ms|0, retrymax=s)", kv)
			}
			if s.env != "" {
				sv.Env = append(sv.Env, s.env+"="+val)
			} else {
				if sv.Dynamic == nil {
					sv.Dynamic = map[string]string{}
				}
				sv.Dynamic[s.dynamic] = val
			}
		}
		out = append(out, sv)
	}
	if len(out) < 2 {
		return nil, invalid("--server-ab: no variant in %q", spec)
	}
	return out, nil
}

// withDynamic sets key's value in a dynamic config document: the first
// "- value:" line under the key when it is there, else the key appended.
func withDynamic(doc, key, value string) string {
	lines := strings.Split(doc, "\n")
	for i, l := range lines {
		if strings.TrimSpace(l) != key+":" {
			continue
		}
		for j := i + 1; j < len(lines); j++ {
			if t := strings.TrimSpace(lines[j]); strings.HasPrefix(t, "- value:") {
				lines[j] = lines[j][:strings.Index(lines[j], "-")] + "- value: " + value
				return strings.Join(lines, "\n")
			}
		}
	}
	if doc != "" && !strings.HasSuffix(doc, "\n") {
		doc += "\n"
	}
	return doc + key + ":\n  - value: " + value + "\n"
}

// sideName is the variant's side name: its processes', logs' and
// profiles' (sale-<i>-prod-shards=16-temporal-cpu.pprof reads badly).
func (v serverVariant) sideName() string {
	return "prod-" + strings.NewReplacer("=", "", "+", "-").Replace(v.Name)
}

// env is the variant's environment over startProd's: its settings, and
// its dynamic config written to dir.
func (v serverVariant) env(dir string) ([]string, error) {
	env := slices.Clone(v.Env)
	if len(v.Dynamic) == 0 {
		return env, nil
	}
	raw, err := os.ReadFile("deploy/temporal/dynamicconfig.yaml")
	if err != nil {
		return nil, err
	}
	doc := string(raw)
	keys := make([]string, 0, len(v.Dynamic))
	for k := range v.Dynamic {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		doc = withDynamic(doc, k, v.Dynamic[k])
	}
	path := filepath.Join(dir, "dynamicconfig-"+v.sideName()+".yaml")
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		return nil, err
	}
	return append(env, "TEMPORAL_DYNAMIC_CONFIG="+path), nil
}

// abRound is one sale under one variant.
type abRound struct {
	Variant string `json:"variant"`
	serverRound
}

func (b *benchRun) runServerAB(ctx context.Context, variants []serverVariant) error {
	e, err := newServerEnv(ctx, b)
	if err != nil {
		return err
	}
	defer e.cleanup()
	var rounds []abRound
	for i := range b.p.SaleRounds {
		for _, v := range variants {
			env, err := v.env(b.out)
			if err != nil {
				return err
			}
			b.logf("servers A/B: round %d, %s: starting temporal-server on PostgreSQL", i, v.Name)
			s, err := e.startProd(ctx, b, prodSide{name: v.sideName(), postgres: v.Postgres, app: v.App, env: env})
			if err != nil {
				return fmt.Errorf("%s: %w", v.Name, err)
			}
			r, err := b.serverSale(ctx, e, s, i, false)
			s.close()
			if err != nil {
				return fmt.Errorf("%s: %w", v.Name, err)
			}
			rounds = append(rounds, abRound{Variant: v.Name, serverRound: r})
		}
	}
	raw, _ := json.MarshalIndent(map[string]any{"command": "go run ./lab/cmd/lab bench --only servers --server-ab " + b.p.ServerAB, "params": b.p,
		"started": b.started.UTC().Format(time.RFC3339), "load_average_before": loadAvg(), "variants": variants, "rounds": rounds}, "", "  ")
	if err := os.WriteFile(filepath.Join(b.out, "servers-ab.json"), raw, 0o644); err != nil {
		return err
	}
	md := serverABMarkdown(variants, rounds, b.p)
	fmt.Print(md)
	return os.WriteFile(filepath.Join(b.out, "servers-ab.md"), []byte(md), 0o644)
}

func serverABMarkdown(variants []serverVariant, rounds []abRound, p benchParams) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Temporal server settings A/B on the production-shaped server (`go run ./lab/cmd/lab bench --only servers --server-ab %s`)\n\n", p.ServerAB)
	fmt.Fprintf(&b, "%d units, %d buyers, %d callers, every winner pays; base is deploy/temporal as deployed (8 history shards, maxConns 10, history.hostLevelCacheMaxSize 8096); each round starts its variant's temporal-server on fresh PostgreSQL databases with its own worker and API, rounds interleaved (", p.SaleUnits, p.SaleBuyers, p.Concurrency)
	for i, v := range variants {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(v.Name)
	}
	b.WriteString(", ...). Box busy is the whole machine's CPU while units were being reserved (buyers still admitted). Eager workflow start is not a lever here: the Go SDK asks for an eager workflow task only in ExecuteWorkflow, never in UpdateWithStartWorkflow, which starts every order, so it would not apply even with the API and a worker in one process.\n\n")
	b.WriteString("| variant | round | orders/s | all reserved s | admitted p99 ms | shed p99 ms | box busy | API idle | CPU ms per unit (all processes) | temporal | postgres | paid | oversold | undersold |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rounds {
		var sum float64
		for _, g := range serverGroups {
			if g != "crowd" {
				sum += r.CPUmsPerUnit[g]
			}
		}
		fmt.Fprintf(&b, "| %s | %d | %.1f | %.1f | %.0f | %.0f | %.0f%% | %.0f%% | %.1f | %.1f | %.1f | %d | %d | %d |\n", r.Variant, r.Round, r.OrdersPerSec, r.AllReservedS,
			r.AdmittedP99ms, r.ShedP99ms, r.BoxBusy*100, r.APIIdleShare*100, sum, r.CPUmsPerUnit["temporal"], r.CPUmsPerUnit["postgres"], r.Paid, r.Oversold, r.Undersold)
	}
	b.WriteString("\nCPU ms per unit excludes the crowd (the bench process). Each round's temporal-server CPU profile, goroutines and the worker's and API's block and mutex profiles are beside this file (sale-<round>-<side>-*.pprof).\n")
	for _, r := range rounds {
		if len(r.ServerPersistence) > 0 {
			writePersistence(&b, r.Variant, r.Round, r.ServerPersistence)
		}
	}
	for _, r := range rounds {
		if r.ServerCPUTop != "" {
			fmt.Fprintf(&b, "\n%s round %d, the temporal-server's CPU over the sale's first %s:\n\n```\n%s```\n", r.Variant, r.Round, serverCPUFor, r.ServerCPUTop)
		}
	}
	return b.String()
}
