//go:build integration

package clustertest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/internal/backend"
	"github.com/flashsale/flashsale/internal/config"
	"github.com/flashsale/flashsale/internal/inventory"
	"github.com/flashsale/flashsale/internal/testenv"
)

// testOpts keeps markers short-lived, as the inventory tests do: the
// cluster is shared and nothing here needs them for a day.
var testOpts = inventory.Options{SoldOutTTL: 10 * time.Second, HeldTTL: 10 * time.Minute, ZeroTTL: 5 * time.Minute}

// testsLock serialises the failover test (which kills a master) against
// every other test on the cluster, across packages and processes: the
// others take it shared, the failover test exclusive.
const testsLock = "/tmp/flashsale-redis-cluster/.tests.lock"

var (
	clusterMu   sync.Mutex
	clusterAddr string
)

// useCluster makes sure the cluster is up (starting it through the
// script), takes the tests lock until the test ends and returns the
// cluster's REDIS_ADDR.
func useCluster(t *testing.T, exclusive bool) string {
	t.Helper()
	// The script's health check costs half a second; once per process is
	// enough, except for the failover test, which needs it after its kill.
	clusterMu.Lock()
	if clusterAddr == "" || exclusive {
		clusterAddr = testenv.RedisClusterAddr(t)
	}
	addr := clusterAddr
	clusterMu.Unlock()
	require.NoError(t, os.MkdirAll(filepath.Dir(testsLock), 0o755))
	f, err := os.OpenFile(testsLock, os.O_CREATE|os.O_RDWR, 0o644)
	require.NoError(t, err)
	how := syscall.LOCK_SH
	if exclusive {
		how = syscall.LOCK_EX
	}
	require.NoError(t, syscall.Flock(int(f.Fd()), how), "lock %s", testsLock)
	t.Cleanup(func() { _ = f.Close() }) // closing drops the lock
	return addr
}

// newClient returns a cluster client built the way every process builds
// its client (backend.NewRedis from REDIS_ADDR), closed when the test ends.
func newClient(t *testing.T, addr string) *redis.ClusterClient {
	t.Helper()
	rdb := backend.NewRedis(config.Config{RedisAddr: addr})
	cc, ok := rdb.(*redis.ClusterClient)
	require.True(t, ok, "REDIS_ADDR=%s built a %T, want a cluster client", addr, rdb)
	t.Cleanup(func() { _ = cc.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, cc.Ping(ctx).Err())
	return cc
}

// newSKU returns a SKU id no other test or run uses and deletes its keys
// on every master when the test ends.
func newSKU(t *testing.T, rdb *redis.ClusterClient) string {
	t.Helper()
	sku := "ct-" + testenv.UniqueID(t)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := deleteSKUKeys(ctx, rdb, sku); err != nil {
			t.Logf("cleanup %s: %v", sku, err)
		}
	})
	return sku
}

// deleteSKUKeys removes every key of sku: SCAN on each master, and UNLINK
// on the master that holds the keys, one key per call, because the keys of
// one SKU span many slots and a multi-key UNLINK would be refused
// (CROSSSLOT).
func deleteSKUKeys(ctx context.Context, rdb *redis.ClusterClient, sku string) error {
	return rdb.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
		iter := node.Scan(ctx, 0, "fs:{sku:"+sku+"*", 1000).Iterator()
		pipe := node.Pipeline()
		for iter.Next(ctx) {
			pipe.Unlink(ctx, iter.Val())
		}
		if err := iter.Err(); err != nil {
			return err
		}
		if pipe.Len() == 0 {
			return nil
		}
		_, err := pipe.Exec(ctx)
		return err
	})
}

// stockKey is bucket b's stock key, as internal/inventory/keys.go lays it
// out: the test needs it to find the master that holds a bucket.
func stockKey(sku string, b int) string { return "fs:{sku:" + sku + ":b" + strconv.Itoa(b) + "}:stock" }

// skuKey is a SKU-level key (the bucket count) in the SKU's slot.
func skuKey(sku string) string { return "fs:{sku:" + sku + "}:buckets" }

// masterOf returns the address of the master serving key's slot, read
// with CLUSTER KEYSLOT and CLUSTER SHARDS.
func masterOf(ctx context.Context, t *testing.T, rdb *redis.ClusterClient, key string) string {
	t.Helper()
	slot, err := rdb.ClusterKeySlot(ctx, key).Result()
	require.NoError(t, err)
	shards, err := rdb.ClusterShards(ctx).Result()
	require.NoError(t, err)
	for _, sh := range shards {
		for _, r := range sh.Slots {
			if slot < r.Start || slot > r.End {
				continue
			}
			for _, n := range sh.Nodes {
				if n.Role == "master" && n.Health == "online" {
					return hostPort(n.IP, n.Port)
				}
			}
		}
	}
	t.Fatalf("no online master serves slot %d (key %s)", slot, key)
	return ""
}

func hostPort(ip string, port int64) string { return fmt.Sprintf("%s:%d", ip, port) }

// bucketMasters maps each of the SKU's n buckets to the master holding it.
func bucketMasters(ctx context.Context, t *testing.T, rdb *redis.ClusterClient, sku string, n int) map[string][]int {
	t.Helper()
	out := make(map[string][]int)
	for b := range n {
		m := masterOf(ctx, t, rdb, stockKey(sku, b))
		out[m] = append(out[m], b)
	}
	return out
}

// sale is what a crowd of buyers got.
type sale struct {
	mu      sync.Mutex
	won     map[string]flashsale.Reservation
	soldOut int
	errs    []error
	// onRetry, if set, sees each error a retrying buyer retries.
	onRetry func(error)
}

func newSale() *sale { return &sale{won: make(map[string]flashsale.Reservation)} }

func (s *sale) units() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var n int64
	for _, r := range s.won {
		n += r.Quantity
	}
	return n
}

// buy has every order reserve qty units, concurrency at a time, all
// starting together. An error other than sold out is kept for the test to
// report; retry, when set, repeats the same order (Reserve is idempotent
// per order) until it gets an answer or ctx ends.
func buy(ctx context.Context, st *inventory.Store, sku string, orders []string, qty int64, concurrency int, retry bool, into *sale) {
	sem := make(chan struct{}, concurrency)
	var wg sync.WaitGroup
	for _, id := range orders {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			for {
				r, err := st.Reserve(ctx, id, sku, qty)
				into.mu.Lock()
				switch {
				case err == nil:
					into.won[id] = r
				case flashsale.ErrorCode(err) == flashsale.SoldOut:
					into.soldOut++
				case retry && ctx.Err() == nil:
					into.mu.Unlock()
					if into.onRetry != nil {
						into.onRetry(err)
					}
					time.Sleep(20 * time.Millisecond)
					continue
				default:
					into.errs = append(into.errs, fmt.Errorf("order %s: %w", id, err))
				}
				into.mu.Unlock()
				return
			}
		}()
	}
	wg.Wait()
}

// orderIDs returns n order ids with a common prefix.
func orderIDs(prefix string, n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("%s-%04d", prefix, i)
	}
	return ids
}

// heldTotal sums HeldByOrder, which SCANs every master for order markers.
func heldTotal(ctx context.Context, t *testing.T, st *inventory.Store, sku string) (map[string]int64, int64) {
	t.Helper()
	held, err := st.HeldByOrder(ctx, sku)
	require.NoError(t, err)
	var n int64
	for _, k := range held {
		n += k
	}
	return held, n
}

// requireConserved checks that Redis accounts for every one of total
// units: in the buckets (Snapshot, units in transit included) or held by
// an order's markers.
func requireConserved(ctx context.Context, t *testing.T, st *inventory.Store, sku string, total int64) (inBuckets, held int64) {
	t.Helper()
	snap, err := st.Snapshot(ctx, sku)
	require.NoError(t, err)
	require.Empty(t, snap.NegativeBuckets)
	_, held = heldTotal(ctx, t, st, sku)
	require.Equal(t, total, snap.Units+held, "buckets %d + held %d must account for every unit", snap.Units, held)
	return snap.Units, held
}
