package deploy

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// scripts/cluster.sh up on a machine without haproxy stops within seconds,
// naming it, before it builds anything: a PATH of every program here but
// haproxy, and a `go` that records being called.
func TestClusterUpChecksPrerequisitesFirst(t *testing.T) {
	bin := t.TempDir()
	for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
		entries, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, e := range entries {
			name := e.Name()
			if name == "haproxy" || name == "go" {
				continue
			}
			if _, err := os.Lstat(filepath.Join(bin, name)); err == nil {
				continue // the first on PATH wins, as for a shell
			}
			require.NoError(t, os.Symlink(filepath.Join(dir, name), filepath.Join(bin, name)))
		}
	}
	called := filepath.Join(t.TempDir(), "go-called")
	require.NoError(t, os.WriteFile(filepath.Join(bin, "go"),
		[]byte("#!/bin/sh\necho \"$@\" >>"+called+"\nexit 1\n"), 0o755))

	state := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/bin/bash", "../scripts/cluster.sh", "up")
	cmd.Env = append(os.Environ(), "PATH="+bin, "FLASHSALE_CLUSTER_DIR="+state, "FLASHSALE_CLUSTER_NO_INSTALL=1")
	start := time.Now()
	out, err := cmd.CombinedOutput()
	took := time.Since(start)
	require.Error(t, err, "up went on without haproxy: %s", out)
	require.NoError(t, ctx.Err(), "up did not stop within 20 s: %s", out)
	require.Less(t, took, 10*time.Second, "%s", out)
	require.Contains(t, string(out), "haproxy (Debian package haproxy)")
	require.Contains(t, string(out), "apt-get install haproxy")
	_, err = os.Stat(called)
	require.True(t, os.IsNotExist(err), "go was called before the check: %v", err)
	entries, err := os.ReadDir(state)
	require.NoError(t, err)
	require.Empty(t, entries, "up wrote state before the check")
	t.Logf("stopped in %v: %s", took.Round(time.Millisecond), strings.TrimSpace(string(out)))
}
