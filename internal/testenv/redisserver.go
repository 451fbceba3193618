package testenv

import (
	"context"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisServer starts a redis-server of the test's own on a free port, with
// args added to its command line, and stops it when the test ends. For a
// test that changes the server's configuration (its maxmemory-policy), which
// on the shared Redis would change it under every other package's tests.
func RedisServer(t testing.TB, args ...string) string {
	t.Helper()
	port := FreePort(t)
	addr := "127.0.0.1:" + strconv.Itoa(port)
	cmd := exec.Command("redis-server", append([]string{"--bind", "127.0.0.1", "--port", strconv.Itoa(port),
		"--save", "", "--appendonly", "no", "--dir", t.TempDir()}, args...)...)
	var out Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatalf("redis-server is required (scripts/services.sh uses it): %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer func() { _ = rdb.Close() }()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := rdb.Ping(ctx).Err()
		cancel()
		if err == nil {
			return addr
		}
		if time.Now().After(deadline) {
			t.Fatalf("redis-server on %s did not answer: %v\n%s", addr, err, out.Tail(20))
		}
	}
}
