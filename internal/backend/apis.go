package backend

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// The API instances in service, for the go/no-go before a sale
// (internal/app.Preflight): each API process announces itself and its
// cores every APIAnnounceEvery in one Redis hash, fs:apis (field: a random
// instance id, value: "<cores>:<expiry, unix ms>"); a field past its
// expiry is a stopped instance, removed by the next reader.

const (
	apisKey = "fs:apis"
	// APIAnnounceEvery is how often an API instance announces itself;
	// an announcement lives three times as long, so a live instance is
	// never missed and a stopped one is gone within that.
	APIAnnounceEvery = 5 * time.Second
	apiPresenceTTL   = 3 * APIAnnounceEvery
)

// AnnounceAPI announces this API instance on rdb until ctx is done: its
// cores (GOMAXPROCS) under a random id. A failed write is retried at the
// next tick (the go/no-go then counts the instance missing: it says so).
func AnnounceAPI(ctx context.Context, rdb redis.UniversalClient) {
	id := make([]byte, 8)
	_, _ = rand.Read(id) // never fails (crypto/rand)
	field := hex.EncodeToString(id)
	t := time.NewTicker(APIAnnounceEvery)
	defer t.Stop()
	for {
		exp := time.Now().Add(apiPresenceTTL).UnixMilli()
		_ = rdb.HSet(ctx, apisKey, field, fmt.Sprintf("%d:%d", runtime.GOMAXPROCS(0), exp)).Err()
		select {
		case <-ctx.Done():
			_ = rdb.HDel(context.WithoutCancel(ctx), apisKey, field).Err()
			return
		case <-t.C:
		}
	}
}

// LiveAPIs counts the API instances announced and not expired, and their
// cores; it removes the expired ones.
func LiveAPIs(ctx context.Context, rdb redis.UniversalClient) (instances, cores int, err error) {
	all, err := rdb.HGetAll(ctx, apisKey).Result()
	if err != nil {
		return 0, 0, fmt.Errorf("read the API instances: %w", err)
	}
	now := time.Now().UnixMilli()
	for id, v := range all {
		c, exp, _ := strings.Cut(v, ":")
		n, err1 := strconv.Atoi(c)
		at, err2 := strconv.ParseInt(exp, 10, 64)
		if err1 != nil || err2 != nil || at < now {
			_ = rdb.HDel(ctx, apisKey, id).Err()
			continue
		}
		instances, cores = instances+1, cores+n
	}
	return instances, cores, nil
}
