package testenv

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// RedisClusterAddr makes sure the local Redis Cluster of
// scripts/redis-cluster.sh is up and healthy and returns its addresses,
// comma-separated as REDIS_ADDR takes them. It runs `redis-cluster.sh up`,
// which does nothing when the cluster is healthy, creates it on first use
// and restarts nodes that died (a failover test's kill -9); a cluster that
// does not come up fails the test. Tests share the cluster, so they must
// use keys made unique with UniqueID rather than flushing.
func RedisClusterAddr(t testing.TB) string {
	t.Helper()
	script := filepath.Join(repoRoot(t), "scripts", "redis-cluster.sh")
	// Creating the cluster takes a few seconds; a node that rejoins
	// after a failover syncs from its new master first.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if out, err := exec.CommandContext(ctx, script, "up").CombinedOutput(); err != nil {
		t.Fatalf("redis cluster is required: %s up: %v\n%s", script, err, out)
	}
	out, err := exec.CommandContext(ctx, script, "addr").Output()
	if err != nil {
		t.Fatalf("%s addr: %v", script, err)
	}
	return strings.TrimSpace(string(out))
}

// repoRoot is the directory holding go.mod, found upwards from the test's
// working directory (its package directory).
func repoRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatalf("working directory: %v", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		} else if !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("look for go.mod: %v", err)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatalf("no go.mod above the test's working directory")
		}
		dir = parent
	}
}
