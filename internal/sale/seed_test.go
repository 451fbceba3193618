//go:build integration

package sale_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/flashsale/flashsale/internal/orderdb"
	"github.com/flashsale/flashsale/internal/sale"
	"github.com/flashsale/flashsale/internal/testenv"
)

// redisHolds reports the keys naming sku whose names, fields, members or
// values contain needle: everything a reader of Redis can see of the SKU.
func redisHolds(t *testing.T, rdb *redis.Client, sku, needle string) []string {
	t.Helper()
	ctx := t.Context()
	var found []string
	iter := rdb.Scan(ctx, 0, "*"+sku+"*", 1000).Iterator()
	for iter.Next(ctx) {
		key := iter.Val()
		var vals []string
		switch typ := rdb.Type(ctx, key).Val(); typ {
		case "string":
			vals = []string{rdb.Get(ctx, key).Val()}
		case "hash":
			for f, v := range rdb.HGetAll(ctx, key).Val() {
				vals = append(vals, f, v)
			}
		case "zset":
			vals = rdb.ZRange(ctx, key, 0, -1).Val()
		case "list":
			vals = rdb.LRange(ctx, key, 0, -1).Val()
		case "set":
			vals = rdb.SMembers(ctx, key).Val()
		default:
			t.Fatalf("key %s of type %s not read", key, typ)
		}
		for _, v := range append(vals, key) {
			if strings.Contains(v, needle) {
				found = append(found, key)
				break
			}
		}
	}
	require.NoError(t, iter.Err())
	return found
}

// Before the open no key of the SKU holds the seed, only its commitment;
// the seed waits in MySQL. After the open the revealed seed is MySQL's,
// matches the commitment and reproduces every rank. A sale prepared before
// seeds left Redis (its seed in the seed key, none in MySQL) still opens.
func TestSeedIsNotInRedisBeforeTheOpen(t *testing.T) {
	ctx := t.Context()
	rdb := testenv.Redis(t)
	db, err := orderdb.Open(ctx, testenv.MySQLDSN(t))
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	sku := "seed-" + testenv.UniqueID(t)
	t.Cleanup(func() {
		for _, k := range rdb.Keys(context.Background(), "*"+sku+"*").Val() {
			_ = rdb.Unlink(context.Background(), k).Err()
		}
	})
	st := sale.New(rdb, func(context.Context, string) (int64, error) { return 10, nil }).WithSeeds(db)
	commit, err := st.Prepare(ctx, sku, "run-seed", time.Now().Add(time.Hour), time.Minute, 0)
	require.NoError(t, err)
	again, err := st.Prepare(ctx, sku, "run-seed", time.Now().Add(time.Hour), time.Minute, 0)
	require.NoError(t, err)
	require.Equal(t, commit, again, "a retried prepare keeps the first seed")
	var users []string
	for i := range 50 {
		users = append(users, fmt.Sprintf("u%02d", i))
		_, err := st.Enter(ctx, sku, users[i])
		require.NoError(t, err)
		_, err = st.PlaceOf(ctx, sku, users[i])
		require.NoError(t, err)
	}
	seed, err := db.SaleSeed(ctx, "run-seed")
	require.NoError(t, err)
	require.Len(t, seed, 64)
	require.Equal(t, commit, sale.SeedHash(seed))
	require.Empty(t, redisHolds(t, rdb, sku, seed), "the seed is in no key of the SKU before the open")
	require.NotEmpty(t, redisHolds(t, rdb, sku, commit), "the commitment is published")

	opened, err := st.Open(ctx, sku, nil)
	require.NoError(t, err)
	require.Equal(t, seed, opened.Seed)
	require.Equal(t, commit, sale.SeedHash(opened.Seed))
	for rank, u := range sale.Ranks(opened.Seed, users) {
		p, err := st.PlaceOf(ctx, sku, u)
		require.NoError(t, err)
		require.Equal(t, int64(rank+1), p.Rank, u)
		require.Equal(t, seed, p.Seed)
	}

	// A sale prepared by the version that kept its seed in Redis.
	legacy := "seed-legacy-" + testenv.UniqueID(t)
	t.Cleanup(func() {
		for _, k := range rdb.Keys(context.Background(), "*"+legacy+"*").Val() {
			_ = rdb.Unlink(context.Background(), k).Err()
		}
	})
	kept := &memSeeds{}
	old := sale.New(rdb, func(context.Context, string) (int64, error) { return 10, nil }).WithSeeds(kept)
	h, err := old.Prepare(ctx, legacy, "run-legacy", time.Now().Add(time.Hour), time.Minute, 0)
	require.NoError(t, err)
	oldSeed, _ := kept.SaleSeed(ctx, "run-legacy")
	seedKey := "fs:{sku:" + legacy + "}:sale:seed"
	require.NoError(t, rdb.Set(ctx, seedKey, "not-the-seed", 0).Err())
	_, err = st.Open(ctx, legacy, nil)
	require.ErrorContains(t, err, "matches its commitment", "a seed that is not the committed one opens nothing")
	require.NoError(t, rdb.Set(ctx, seedKey, oldSeed, 0).Err())
	o, err := st.Open(ctx, legacy, nil)
	require.NoError(t, err)
	require.Equal(t, oldSeed, o.Seed)
	require.Equal(t, h, sale.SeedHash(o.Seed))
}
