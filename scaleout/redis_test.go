//go:build scaleout

package scaleout

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"github.com/redis/go-redis/v9"
)

// masterPortFor is the port of the master serving key's slot, asked of a
// fresh cluster client so no cached slot map answers.
func masterPortFor(ctx context.Context, key string) (string, error) {
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: strings.Split(os.Getenv("REDIS_ADDR"), ",")})
	defer c.Close()
	m, err := c.MasterForKey(ctx, key)
	if err != nil {
		return "", err
	}
	addr := m.Options().Addr
	i := strings.LastIndex(addr, ":")
	if i < 0 {
		return "", fmt.Errorf("master address %q has no port", addr)
	}
	return addr[i+1:], nil
}

func runCmd(ctx context.Context, name string, args ...string) (string, error) {
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	return string(out), err
}
