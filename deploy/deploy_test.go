//go:build integration

// Package deploy holds the configuration both deployments of flashsale run
// with: scripts/cluster.sh (processes on loopback, the topology the
// scale-out suite tests) and docker-compose.yml (containers, which no
// machine here can run). These tests prove the two really share it, so
// what is tested is what compose would run.
package deploy

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.yaml.in/yaml/v3"

	"github.com/flashsale/flashsale/workflows"
)

// lines reads a file of KEY VALUE (or KEY=VALUE) lines, comments and blank
// lines skipped.
func lines(t *testing.T, path string) []string {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		l, _, _ := strings.Cut(sc.Text(), "#")
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// The list setup-namespace.sh registers (cluster.sh and compose's
// temporal-setup job) is the one the workflow upserts and the worker checks.
func TestSearchAttributesAreTheWorkflows(t *testing.T) {
	want := map[string]enumspb.IndexedValueType{}
	for _, k := range workflows.SearchAttributes {
		want[k.GetName()] = k.GetValueType()
	}
	got := map[string]enumspb.IndexedValueType{}
	for _, l := range lines(t, "temporal/search-attributes") {
		f := strings.Fields(l)
		require.Len(t, f, 2, "line %q: want Name Type", l)
		typ, err := enumspb.IndexedValueTypeFromString(f[1])
		require.NoError(t, err, "line %q", l)
		got[f[0]] = typ
	}
	require.Equal(t, want, got, "deploy/temporal/search-attributes differs from workflows.SearchAttributes")
}

// composeConfig is `docker-compose config` of the repository's compose file
// with throwaway secrets, parsed. docker-compose must be installed
// (scripts/test.sh installs it); a missing one fails, never skips.
func composeConfig(t *testing.T) map[string]any {
	t.Helper()
	bin, err := exec.LookPath("docker-compose")
	require.NoError(t, err, "docker-compose is needed to validate docker-compose.yml (apt-get install docker-compose)")
	envFile := filepath.Join(t.TempDir(), "env")
	require.NoError(t, os.WriteFile(envFile, []byte(strings.Join([]string{
		"POSTGRES_PASSWORD=test-postgres-password",
		"MYSQL_ROOT_PASSWORD=test-mysql-password",
		"WEBHOOK_SECRET=test-webhook-secret-0123456789",
		"ADMIN_TOKEN=test-admin-token-0123456789",
		"USER_ID_HMAC_KEY=test-user-id-key-0123456789",
		"BUYER_JWT_SECRET=test-buyer-secret-0123456789-0123456789",
	}, "\n")+"\n"), 0o600))
	cmd := exec.Command(bin, "--env-file", envFile, "-f", "../docker-compose.yml", "config")
	cmd.Env = cleanEnv()
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "docker-compose config: %s", out)
	var cfg map[string]any
	require.NoError(t, yaml.Unmarshal(out, &cfg))
	return cfg
}

// cleanEnv is the environment without any variable the compose file
// interpolates, so only the env file given speaks.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "POSTGRES_USER", "POSTGRES_PASSWORD", "MYSQL_ROOT_PASSWORD", "WEBHOOK_SECRET", "ADMIN_TOKEN", "USER_ID_HMAC_KEY",
			"BUYER_JWT_SECRET", "BUYER_JWKS_URL", "BUYER_JWT_AUDIENCE", "BUYER_JWT_ISSUER", "PAYMENT_TIMEOUT":
			continue
		}
		env = append(env, kv)
	}
	return env
}

// A compose file without its secrets must not validate: every secret is a
// ${VAR:?...}, none has a default.
func TestComposeRefusesMissingSecrets(t *testing.T) {
	empty := filepath.Join(t.TempDir(), "env")
	require.NoError(t, os.WriteFile(empty, nil, 0o600))
	cmd := exec.Command("docker-compose", "--env-file", empty, "-f", "../docker-compose.yml", "config", "-q")
	cmd.Env = cleanEnv()
	out, err := cmd.CombinedOutput()
	require.Error(t, err, "docker-compose config passed without any secret: %s", out)
	require.Contains(t, string(out), "see .env.example")
}

func service(t *testing.T, cfg map[string]any, name string) map[string]any {
	t.Helper()
	svcs, _ := cfg["services"].(map[string]any)
	s, ok := svcs[name].(map[string]any)
	require.True(t, ok, "docker-compose.yml has no service %s", name)
	return s
}

// mounts: "source -> target" of a service's bind mounts, sources relative
// to the repository.
func mounts(t *testing.T, s map[string]any) []string {
	t.Helper()
	root, err := filepath.Abs("..")
	require.NoError(t, err)
	var out []string
	vols, _ := s["volumes"].([]any)
	for _, v := range vols {
		switch v := v.(type) {
		case string: // docker-compose v1: "src:target:mode"
			f := strings.Split(v, ":")
			if rel, err := filepath.Rel(root, f[0]); err == nil && len(f) > 1 {
				out = append(out, rel+" -> "+f[1])
			}
		case map[string]any: // compose v2's long form
			src, _ := v["source"].(string)
			dst, _ := v["target"].(string)
			if rel, err := filepath.Rel(root, src); err == nil {
				out = append(out, rel+" -> "+dst)
			}
		}
	}
	return out
}

func words(v any) string {
	switch v := v.(type) {
	case []any:
		var s []string
		for _, x := range v {
			s = append(s, words(x))
		}
		return strings.Join(s, " ")
	case string:
		return v
	case nil:
		return ""
	}
	return ""
}

func env(s map[string]any) map[string]string {
	out := map[string]string{}
	switch e := s["environment"].(type) {
	case map[string]any:
		for k, v := range e {
			out[k], _ = v.(string)
		}
	case []any:
		for _, kv := range e {
			k, v, _ := strings.Cut(kv.(string), "=")
			out[k] = v
		}
	}
	return out
}

// Compose runs the same Temporal config, dynamic config, setup scripts,
// search attribute list, Redis node config and cluster script, HAProxy
// config and process settings as scripts/cluster.sh, from the same files.
func TestComposeRunsTheClusterFiles(t *testing.T) {
	cfg := composeConfig(t)
	const tdir = "/etc/flashsale/temporal"

	for _, name := range []string{"temporal-frontend", "temporal-history", "temporal-matching", "temporal-worker"} {
		s := service(t, cfg, name)
		require.Contains(t, mounts(t, s), "deploy/temporal -> "+tdir, name)
		ep := words(s["entrypoint"])
		require.Contains(t, ep, "--config "+tdir+"/config --env flashsale", name)
		e := env(s)
		require.Equal(t, tdir+"/dynamicconfig.yaml", e["TEMPORAL_DYNAMIC_CONFIG"], name)
		require.Equal(t, strings.TrimPrefix(name, "temporal-"), e["TEMPORAL_SERVICE"], name)
	}
	hist := service(t, cfg, "temporal-history")
	deploy, _ := hist["deploy"].(map[string]any)
	require.EqualValues(t, 2, deploy["replicas"], "two history hosts, as cluster.sh runs")

	schema := service(t, cfg, "temporal-schema")
	require.Contains(t, mounts(t, schema), "deploy/temporal -> "+tdir)
	require.Contains(t, words(schema["entrypoint"]), tdir+"/setup-schema.sh")

	setup := service(t, cfg, "temporal-setup")
	require.Contains(t, mounts(t, setup), "deploy/temporal -> "+tdir)
	require.Contains(t, words(setup["entrypoint"]), tdir+"/setup-namespace.sh")
	require.Equal(t, tdir+"/search-attributes", env(setup)["SEARCH_ATTRIBUTES"])

	for i := 1; i <= 6; i++ {
		s := service(t, cfg, "redis-"+string(rune('0'+i)))
		require.Contains(t, mounts(t, s), "deploy/redis/node.conf -> /usr/local/etc/redis/node.conf")
		require.Contains(t, words(s["command"]), "redis-server /usr/local/etc/redis/node.conf")
	}
	rc := service(t, cfg, "redis-cluster")
	require.Contains(t, mounts(t, rc), "deploy/redis/create-cluster.sh -> /usr/local/etc/redis/create-cluster.sh")
	require.Contains(t, words(rc["entrypoint"]), "/usr/local/etc/redis/create-cluster.sh")

	hp := service(t, cfg, "haproxy")
	require.Contains(t, mounts(t, hp), "deploy/haproxy.cfg -> /usr/local/etc/haproxy/haproxy.cfg")

	// Every setting of deploy/flashsale.env reaches every flashsale process.
	settings := lines(t, "flashsale.env")
	require.NotEmpty(t, settings)
	for _, name := range []string{"worker", "api", "reconcile-schedule"} {
		e := env(service(t, cfg, name))
		for _, kv := range settings {
			k, v, _ := strings.Cut(kv, "=")
			require.Equal(t, v, e[k], "%s: %s from deploy/flashsale.env", name, k)
		}
		require.Contains(t, e["REDIS_ADDR"], ",", "%s: a Redis Cluster client", name)
	}
	for _, name := range []string{"worker", "api"} {
		s := service(t, cfg, name)
		require.Empty(t, s["ports"], "%s publishes a host port: --scale would collide on it", name)
		deploy, _ := s["deploy"].(map[string]any)
		require.EqualValues(t, 2, deploy["replicas"], "%s: two instances, as cluster.sh runs", name)
	}
	require.Contains(t, words(service(t, cfg, "reconcile-schedule")["command"]), "starter reconcile schedule")
	_, hasAutoSetup := cfg["services"].(map[string]any)["temporal"]
	require.False(t, hasAutoSetup)
}

// scripts/cluster.sh and scripts/redis-cluster.sh read the same files.
func TestClusterScriptsReadTheDeployFiles(t *testing.T) {
	read := func(p string) string {
		raw, err := os.ReadFile(p)
		require.NoError(t, err)
		return string(raw)
	}
	cluster := read("../scripts/cluster.sh")
	for _, f := range []string{
		`--config "$ROOT/deploy/temporal/config" --env flashsale`,
		`TEMPORAL_DYNAMIC_CONFIG=$ROOT/deploy/temporal/dynamicconfig.yaml`,
		`"$ROOT/deploy/temporal/setup-schema.sh"`,
		`"$ROOT/deploy/temporal/setup-namespace.sh"`,
		`SEARCH_ATTRIBUTES=$ROOT/deploy/temporal/search-attributes`,
		`-f "$ROOT/deploy/haproxy.cfg"`,
		`"$ROOT/deploy/flashsale.env"`,
	} {
		require.Contains(t, cluster, f, "scripts/cluster.sh")
	}
	redis := read("../scripts/redis-cluster.sh")
	require.Contains(t, redis, `/deploy/redis/node.conf`)
	require.Contains(t, redis, `redis-server "$NODE_CONF"`)
	require.Contains(t, redis, `/create-cluster.sh"`)
}

// deploy/haproxy.cfg is valid for both deployments: two loopback APIs
// (cluster.sh) and Docker's DNS (compose); and refused with neither.
func TestHAProxyConfigBothWays(t *testing.T) {
	bin, err := exec.LookPath("haproxy")
	require.NoError(t, err, "haproxy is needed (apt-get install haproxy)")
	check := func(extra ...string) ([]byte, error) {
		cmd := exec.Command(bin, "-c", "-f", "haproxy.cfg")
		cmd.Env = append(os.Environ(), append([]string{"HAPROXY_BIND=127.0.0.1:17480", "HAPROXY_STATS_BIND=127.0.0.1:17489"}, extra...)...)
		return cmd.CombinedOutput()
	}
	out, err := check("API_1=127.0.0.1:17481", "API_2=127.0.0.1:17482")
	require.NoError(t, err, "cluster.sh's way: %s", out)
	out, err = check("API_DNS_NAME=api:8080")
	require.NoError(t, err, "compose's way: %s", out)
	out, err = check()
	require.Error(t, err, "no API configured, yet valid: %s", out)
}
