//go:build integration

package backend_test

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/flashsale/flashsale/internal/backend"
	"github.com/flashsale/flashsale/internal/testenv"
)

// API instances announce themselves with their cores: two running are
// counted with theirs, one stopped is gone at once, and an announcement
// past its expiry (a killed process) is not counted and is removed.
func TestLiveAPIs(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: testenv.RedisServer(t)})
	t.Cleanup(func() { _ = rdb.Close() })
	ctx := t.Context()
	count := func() (int, int) {
		n, cores, err := backend.LiveAPIs(ctx, rdb)
		require.NoError(t, err)
		return n, cores
	}
	a, stopA := context.WithCancel(ctx)
	b, stopB := context.WithCancel(ctx)
	doneA, doneB := make(chan struct{}), make(chan struct{})
	go func() { defer close(doneA); backend.AnnounceAPI(a, rdb) }()
	go func() { defer close(doneB); backend.AnnounceAPI(b, rdb) }()
	require.Eventually(t, func() bool { n, _ := count(); return n == 2 }, 5*time.Second, 10*time.Millisecond)
	_, cores := count()
	require.Equal(t, 2*runtime.GOMAXPROCS(0), cores)
	stopA()
	<-doneA
	n, _ := count()
	require.Equal(t, 1, n, "a stopped instance takes its announcement with it")
	require.NoError(t, rdb.HSet(ctx, "fs:apis", "killed", "4:1").Err())
	n, _ = count()
	require.Equal(t, 1, n, "an expired announcement is not counted")
	require.False(t, rdb.HExists(ctx, "fs:apis", "killed").Val(), "and is removed")
	stopB()
	<-doneB
}
