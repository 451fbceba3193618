package deploy

import (
	"context"
	"net/netip"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Tests of docker-compose.yml and the files it runs that need no Docker
// engine: each guards a defect met when the file first ran on one
// (scripts/compose-smoke.sh runs the whole stack).

type composeFile struct {
	Services map[string]struct {
		Image      string         `yaml:"image"`
		Build      any            `yaml:"build"`
		PullPolicy string         `yaml:"pull_policy"`
		Command    []string       `yaml:"command"`
		Volumes    []string       `yaml:"volumes"`
		Networks   map[string]any `yaml:"networks"`
	} `yaml:"services"`
	Networks map[string]struct {
		IPAM struct {
			Config []struct {
				Subnet  string `yaml:"subnet"`
				IPRange string `yaml:"ip_range"`
			} `yaml:"config"`
		} `yaml:"ipam"`
	} `yaml:"networks"`
}

// readCompose parses docker-compose.yml itself (anchors and merge keys
// resolved by the YAML parser), without docker-compose.
func readCompose(t *testing.T) composeFile {
	t.Helper()
	var c composeFile
	readYAML(t, "../docker-compose.yml", &c)
	require.NotEmpty(t, c.Services)
	return c
}

// The Web UI image reads the config mounted at config/docker.yaml as it is
// from 2.37.3 on (2.34.0's entrypoint wrote that file itself and exited on
// the read-only mount), and it is the version scripts/cluster.sh builds.
func TestComposeUIImageReadsTheMountedConfig(t *testing.T) {
	ui := readCompose(t).Services["temporal-ui"]
	repo, tag, ok := strings.Cut(ui.Image, ":")
	require.True(t, ok, "temporal-ui image %q has no tag", ui.Image)
	require.Equal(t, "temporalio/ui", repo)
	require.Contains(t, ui.Volumes, "./deploy/temporal-ui/flashsale.yaml:/home/ui-server/config/docker.yaml:ro")
	v, ok := semver(tag)
	require.True(t, ok, "temporal-ui tag %q is no version", tag)
	require.True(t, v[0] > 2 || v[0] == 2 && (v[1] > 37 || v[1] == 37 && v[2] >= 3), "temporalio/ui:%s writes its own config/docker.yaml; 2.37.3+ reads the mounted one", tag)
	cluster, err := os.ReadFile("../scripts/cluster.sh")
	require.NoError(t, err)
	require.Contains(t, string(cluster), "UI_VERSION=v"+tag+"\n", "compose runs the UI version scripts/cluster.sh tests")
}

// semver: MAJOR.MINOR.PATCH as numbers.
func semver(s string) (v [3]int, ok bool) {
	m := regexp.MustCompile(`^(\d+)\.(\d+)\.(\d+)$`).FindStringSubmatch(s)
	if m == nil {
		return v, false
	}
	for i := range v {
		v[i], _ = strconv.Atoi(m[i+1])
	}
	return v, true
}

// Every Redis node has a fixed address of its own, inside the stack's
// subnet and outside the range other containers are given addresses from,
// so a node restarted by `docker compose stop`/`start` comes back where its
// peers' nodes.conf says it is.
func TestComposeRedisNodesHaveFixedAddresses(t *testing.T) {
	c := readCompose(t)
	ipam := c.Networks["default"].IPAM.Config
	require.Len(t, ipam, 1, "the default network has one fixed subnet")
	subnet, err := netip.ParsePrefix(ipam[0].Subnet)
	require.NoError(t, err)
	dynamic, err := netip.ParsePrefix(ipam[0].IPRange)
	require.NoError(t, err)
	require.True(t, subnet.Contains(dynamic.Addr()), "ip_range %s inside subnet %s", dynamic, subnet)
	seen := map[netip.Addr]string{}
	for i := 1; i <= 6; i++ {
		name := "redis-" + string(rune('0'+i))
		s, ok := c.Services[name]
		require.True(t, ok, name)
		def, _ := s.Networks["default"].(map[string]any)
		addr, err := netip.ParseAddr(stringOf(def["ipv4_address"]))
		require.NoError(t, err, "%s has no fixed ipv4_address", name)
		require.True(t, subnet.Contains(addr), "%s: %s outside %s", name, addr, subnet)
		require.False(t, dynamic.Contains(addr), "%s: %s inside ip_range %s, where another container may take it", name, addr, dynamic)
		require.NotContains(t, seen, addr, "%s and %s share %s", name, seen[addr], addr)
		seen[addr] = name
	}
}

func stringOf(v any) string { s, _ := v.(string); return s }

// One image, built once: only the worker service builds flashsale:local; the
// other services of that image never pull it (there is nothing to pull).
func TestComposeBuildsTheImageOnce(t *testing.T) {
	c := readCompose(t)
	var builders []string
	users := 0
	for name, s := range c.Services {
		if s.Build != nil {
			builders = append(builders, name)
			require.Equal(t, "flashsale:local", s.Image, name)
			continue
		}
		if s.Image == "flashsale:local" {
			users++
			require.Equal(t, "never", s.PullPolicy, "%s runs the built image and must not pull it", name)
		}
	}
	require.Equal(t, []string{"worker"}, builders, "services with build:")
	require.Equal(t, 2, users, "api and reconcile-schedule run the worker's image")
}

// After `down`/`up` or `stop`/`start` Redis is empty (no persistence): the
// reconcile job, which runs at every up and start, refills it at once.
func TestComposeReconcilesAtStart(t *testing.T) {
	cmd := strings.Join(readCompose(t).Services["reconcile-schedule"].Command, " ")
	require.Equal(t, "starter reconcile schedule --every 1m --now", cmd)
}

// The namespace job's wait is bounded in seconds: against a frontend that
// takes the connection and never answers, it gives up after
// SETUP_WAIT_SECONDS, not after that many calls of their own timeout each.
func TestSetupNamespaceWaitIsBoundedInSeconds(t *testing.T) {
	dir := t.TempDir()
	cli := filepath.Join(dir, "temporal")
	// A CLI that never answers: it hangs until it is killed.
	require.NoError(t, os.WriteFile(cli, []byte("#!/bin/sh\nexec sleep 600\n"), 0o755))
	// A backstop for the test only: the script must end well before it.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "temporal/setup-namespace.sh")
	cmd.Env = append(os.Environ(), "TEMPORAL_CLI="+cli, "TEMPORAL_ADDRESS=127.0.0.1:1", "SETUP_WAIT_SECONDS=2",
		"SEARCH_ATTRIBUTES=temporal/search-attributes")
	out, err := cmd.CombinedOutput()
	require.NoError(t, ctx.Err(), "setup-namespace.sh still waiting: %s", out)
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, "%s", out)
	require.Equal(t, 1, exit.ExitCode(), "%s", out)
	require.Contains(t, string(out), "frontend 127.0.0.1:1 SERVING: still failing after 2s: no answer within 2s")
}

// dockerignored: whether the build context leaves rel out, by the rules of
// .dockerignore as Docker reads them (the last matching pattern wins; a
// pattern matches a path or any directory above it; "**/" any depth).
func dockerignored(rules []string, rel string) bool {
	ignored := false
	for _, r := range rules {
		neg := strings.HasPrefix(r, "!")
		pat := strings.TrimPrefix(r, "!")
		for p := rel; p != "." && p != "/"; p = path.Dir(p) {
			if globMatch(pat, p) {
				ignored = !neg
				break
			}
		}
	}
	return ignored
}

func globMatch(pat, p string) bool {
	if rest, ok := strings.CutPrefix(pat, "**/"); ok {
		parts := strings.Split(p, "/")
		for i := range parts {
			if ok, _ := path.Match(rest, strings.Join(parts[i:], "/")); ok {
				return true
			}
		}
		return false
	}
	ok, _ := path.Match(pat, p)
	return ok
}

// The build context is the module's sources and nothing else: every file
// the Dockerfile's go build reads is in it, and a compose override, an .env
// copy or anything else new at the top is not (it would bust the build
// cache, or leak into the image).
func TestDockerignoreKeepsOnlyTheModule(t *testing.T) {
	raw, err := os.ReadFile("../.dockerignore")
	require.NoError(t, err)
	var rules []string
	for _, l := range strings.Split(string(raw), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			rules = append(rules, l)
		}
	}
	require.Equal(t, "*", rules[0], ".dockerignore is an allowlist")

	root, err := filepath.Abs("..")
	require.NoError(t, err)
	cmd := exec.Command("go", "list", "-deps", "-f",
		`{{if .Module}}{{if .Module.Main}}{{.Dir}}|{{join .GoFiles ","}}|{{join .EmbedFiles ","}}{{end}}{{end}}`,
		"./worker", "./api", "./starter")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOWORK=off")
	out, err := cmd.Output()
	require.NoError(t, err)
	needed := []string{"go.mod", "go.sum"}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Split(l, "|")
		require.Len(t, f, 3, l)
		dir, err := filepath.Rel(root, f[0])
		require.NoError(t, err)
		for _, list := range f[1:] {
			for _, name := range strings.Split(list, ",") {
				if name != "" {
					needed = append(needed, path.Join(filepath.ToSlash(dir), name))
				}
			}
		}
	}
	require.Greater(t, len(needed), 50)
	for _, f := range needed {
		require.False(t, dockerignored(rules, f), "the build needs %s; .dockerignore leaves it out", f)
	}
	for _, f := range []string{
		"docker-compose.yml", "docker-compose.override.yml", "compose.yaml", "compose.override.yaml",
		"docker-compose.prod.yml", ".env", ".env.local", "notes.txt", "Dockerfile", ".dockerignore",
		"README.md", "docs/deploy.md", "deploy/flashsale.env", "scripts/test.sh", "lab/go.mod", "e2e/x.go",
		".git/HEAD", "go.work", "internal/devstack/mysqld/go.mod", "internal/orders/orders_test.go",
		"workflows/testdata/order.json",
	} {
		require.True(t, dockerignored(rules, f), "%s is in the build context", f)
	}
}
