//go:build scaleout

package scaleout

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

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

// node is a plain client of one Redis Cluster node on loopback.
func node(port string) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + port, ReadTimeout: 5 * time.Second})
}

// replicaPortOf is the port of the replica of the master on port, read from
// that master's INFO replication (slave0:ip=...,port=...,state=online).
func replicaPortOf(ctx context.Context, port string) (string, error) {
	info, err := node(port).Info(ctx, "replication").Result()
	if err != nil {
		return "", err
	}
	for _, l := range strings.Split(info, "\n") {
		l = strings.TrimSpace(l)
		if !strings.HasPrefix(l, "slave0:") {
			continue
		}
		for _, f := range strings.Split(strings.TrimPrefix(l, "slave0:"), ",") {
			if p, ok := strings.CutPrefix(f, "port="); ok {
				return p, nil
			}
		}
	}
	return "", fmt.Errorf("redis-%s has no replica: %s", port, info)
}

// infoField is one "field:value" of a node's INFO section.
func infoField(ctx context.Context, port, section, field string) string {
	info, err := node(port).Info(ctx, section).Result()
	if err != nil {
		return ""
	}
	for _, l := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), field+":"); ok {
			return v
		}
	}
	return ""
}

// skuKeys is every key of sku's buckets held by the node on port, with its
// value as DUMP serializes it (so any change of any type shows), and the
// stock of each bucket found there.
type skuKeys struct {
	values map[string]string
	stock  map[string]int64
}

func snapshotSKU(ctx context.Context, port, sku string) (skuKeys, error) {
	c := node(port)
	defer c.Close()
	s := skuKeys{values: map[string]string{}, stock: map[string]int64{}}
	// Bucket keys are fs:{sku:<sku>:b<i>}:...; the braces are literal in a
	// SCAN pattern.
	iter := c.Scan(ctx, 0, "fs:{sku:"+sku+":b*", 1000).Iterator()
	for iter.Next(ctx) {
		k := iter.Val()
		v, err := c.Dump(ctx, k).Result()
		if err == redis.Nil {
			continue // expired between SCAN and DUMP
		}
		if err != nil {
			return s, err
		}
		s.values[k] = v
		if strings.HasSuffix(k, "}:stock") {
			n, err := c.Get(ctx, k).Int64()
			if err != nil {
				return s, err
			}
			s.stock[k] = n
		}
	}
	return s, iter.Err()
}

// lostWrites compares what the old master had acknowledged (acked) with
// what its promoted replica holds (after): keys it never got, keys whose
// value differs, and the units of stock the replica has more (+) or fewer
// (-) than the master had acknowledged.
func lostWrites(acked, after skuKeys) (missing, changed int, units int64) {
	for k, v := range acked.values {
		w, ok := after.values[k]
		switch {
		case !ok:
			missing++
		case w != v:
			changed++
		}
	}
	for k, n := range acked.stock {
		units += after.stock[k] - n
	}
	return missing, changed, units
}

// stockedMaster is the master (its port) holding the most units of sku's
// buckets, and the stock key of its fullest bucket, waiting up to within
// for one to hold any (units released by expired orders come back): a
// master whose buckets are empty would see no reserve after a cut.
func stockedMaster(ctx context.Context, sku string, within time.Duration) (port, key string, err error) {
	deadline := time.Now().Add(within)
	for {
		port, key, err = fullestMaster(ctx, sku)
		if err != nil || key != "" {
			return port, key, err
		}
		if time.Now().After(deadline) {
			return "", "", fmt.Errorf("no master held a unit of %s for %v", sku, within)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// fullestMaster reads every master's buckets of sku once; key is empty
// when none holds a unit.
func fullestMaster(ctx context.Context, sku string) (port, key string, err error) {
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: strings.Split(os.Getenv("REDIS_ADDR"), ",")})
	defer c.Close()
	var masters []string
	var mu sync.Mutex
	err = c.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
		addr := m.Options().Addr
		mu.Lock()
		masters = append(masters, addr[strings.LastIndex(addr, ":")+1:])
		mu.Unlock()
		return nil
	})
	if err != nil {
		return "", "", err
	}
	var best int64
	for _, p := range masters {
		snap, err := snapshotSKU(ctx, p, sku)
		if err != nil {
			return "", "", fmt.Errorf("read redis-%s: %w", p, err)
		}
		var total, fullest int64
		var fullestKey string
		for k, n := range snap.stock {
			total += n
			if n > fullest {
				fullest, fullestKey = n, k
			}
		}
		if total > best {
			best, port, key = total, p, fullestKey
		}
	}
	return port, key, nil
}
