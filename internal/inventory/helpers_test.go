//go:build integration

package inventory

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/flashsale/flashsale/internal/testenv"
)

// testOpts keeps markers short-lived: the Redis is shared and nothing here
// needs them for a day. Cleanup deletes them anyway.
var testOpts = Options{SoldOutTTL: 10 * time.Second, HeldTTL: 10 * time.Minute, ZeroTTL: 5 * time.Minute}

// newStore returns a Store on the real Redis plus the raw client.
func newStore(t testing.TB) (*Store, *redis.Client) {
	t.Helper()
	rdb := testenv.Redis(t)
	return New(rdb, testOpts), rdb
}

// newSKU returns a SKU id no other test or run uses and deletes every key
// of it when the test ends (the Redis is shared: no FLUSHDB).
func newSKU(t testing.TB, rdb *redis.Client) string {
	t.Helper()
	sku := "t-" + testenv.UniqueID(t)
	t.Cleanup(func() { deleteSKUKeys(t, rdb, sku) })
	return sku
}

// deleteSKUKeys removes the SKU-level keys and every bucket key (stock,
// order and restock markers) of sku. The SKU id is random, so the pattern
// cannot match another test's keys.
func deleteSKUKeys(t testing.TB, rdb *redis.Client, sku string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	iter := rdb.Scan(ctx, 0, "fs:{sku:"+sku+"*", 1000).Iterator()
	var batch []string
	flush := func() {
		if len(batch) > 0 {
			if err := rdb.Unlink(ctx, batch...).Err(); err != nil {
				t.Logf("cleanup %s: %v", sku, err)
			}
			batch = batch[:0]
		}
	}
	for iter.Next(ctx) {
		batch = append(batch, iter.Val())
		if len(batch) == 500 {
			flush()
		}
	}
	flush()
	if err := iter.Err(); err != nil {
		t.Logf("cleanup scan %s: %v", sku, err)
	}
}

// orderStartingAt returns an order id whose probe starts at bucket want of n.
func orderStartingAt(t testing.TB, prefix string, want, n int) string {
	t.Helper()
	for i := range 100000 {
		id := fmt.Sprintf("%s-%d", prefix, i)
		if startBucket(id, n) == want {
			return id
		}
	}
	t.Fatalf("no order id starting at bucket %d of %d", want, n)
	return ""
}

// stock reads the SKU's per-bucket stock.
func stock(t testing.TB, s *Store, sku string) Stock {
	t.Helper()
	st, err := s.Stock(context.Background(), sku)
	require.NoError(t, err)
	return st
}

// keySlot is Redis Cluster's slot function (CRC16/XMODEM of the hash tag,
// mod 16384), so the tests can check the key layout without a cluster.
func keySlot(key string) int {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	var crc uint16
	for k := 0; k < len(key); k++ {
		crc ^= uint16(key[k]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return int(crc) % 16384
}
