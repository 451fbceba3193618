package backend

import (
	"context"
	"net"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flashsale/flashsale/internal/config"
	"github.com/flashsale/flashsale/internal/redisguard"
)

// Pool and timeouts of every Redis client, single node or cluster (where
// the pool is per node).
const (
	// A flash sale is many short concurrent calls; the default pool
	// (10 per CPU) queues them on a 2-core machine.
	redisPoolSize = 128
	// Every call is a few keys or a short script that answers in well
	// under a millisecond. Past these, Redis is treated as unreachable
	// (redisguard) instead of every buyer waiting out the default 3-5 s.
	redisDialTimeout  = time.Second
	redisReadTimeout  = 500 * time.Millisecond
	redisWriteTimeout = 500 * time.Millisecond
	redisPoolTimeout  = time.Second
)

// NewRedis returns the Redis client a process uses: a cluster client when
// cfg names a Redis Cluster (several addresses in REDIS_ADDR, or
// REDIS_CLUSTER=true with one seed), a single-node client otherwise. The
// inventory keys carry hash tags, so every script and MGET stays in one
// slot either way.
func NewRedis(cfg config.Config) redis.UniversalClient {
	if !cfg.RedisClusterMode() {
		addr := cfg.RedisAddr
		if addrs := cfg.RedisAddrs(); len(addrs) == 1 {
			addr = addrs[0]
		}
		c := redis.NewClient(&redis.Options{
			Addr:         addr,
			PoolSize:     redisPoolSize,
			DialTimeout:  redisDialTimeout,
			ReadTimeout:  redisReadTimeout,
			WriteTimeout: redisWriteTimeout,
			PoolTimeout:  redisPoolTimeout,
		})
		// A deadline met waiting for a connection is this process's
		// overload (BUSY), not Redis down.
		c.AddHook(redisguard.PoolWaitHook())
		return c
	}
	cc := redis.NewClusterClient(&redis.ClusterOptions{
		Addrs:        cfg.RedisAddrs(),
		PoolSize:     redisPoolSize,
		DialTimeout:  redisDialTimeout,
		ReadTimeout:  redisReadTimeout,
		WriteTimeout: redisWriteTimeout,
		PoolTimeout:  redisPoolTimeout,
	})
	// After a failover the dead master's address refuses connections, but
	// go-redis re-reads the slot map only on a MOVED reply or once the map
	// is 10 s old, so every call to the dead master's slots would fail for
	// up to 10 s after its replica took over. A failed dial asks for a
	// reload at once (ReloadState runs one at a time in the background),
	// so calls follow the promoted replica within a moment of its election.
	cc.OnNewNode(func(node *redis.Client) { node.AddHook(reloadOnDialError{cc}) })
	cc.AddHook(redisguard.PoolWaitHook())
	return cc
}

// reloadOnDialError is the hook that makes a cluster client re-read the
// slot map when a node cannot be reached.
type reloadOnDialError struct{ cc *redis.ClusterClient }

func (h reloadOnDialError) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := next(ctx, network, addr)
		if err != nil {
			h.cc.ReloadState(context.WithoutCancel(ctx))
		}
		return conn, err
	}
}

func (reloadOnDialError) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (reloadOnDialError) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
