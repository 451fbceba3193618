package backend

import (
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/flashsale/flashsale/internal/config"
)

func TestNewRedisPicksTheClient(t *testing.T) {
	t.Run("one address is a single node", func(t *testing.T) {
		rdb := NewRedis(config.Config{RedisAddr: " 10.0.0.1:6379 "})
		t.Cleanup(func() { _ = rdb.Close() })
		c, ok := rdb.(*redis.Client)
		require.True(t, ok, "got %T", rdb)
		o := c.Options()
		require.Equal(t, "10.0.0.1:6379", o.Addr)
		require.Equal(t, redisPoolSize, o.PoolSize)
		require.Equal(t, redisDialTimeout, o.DialTimeout)
		require.Equal(t, redisReadTimeout, o.ReadTimeout)
		require.Equal(t, redisWriteTimeout, o.WriteTimeout)
		require.Equal(t, redisPoolTimeout, o.PoolTimeout)
	})
	t.Run("several addresses are a cluster", func(t *testing.T) {
		rdb := NewRedis(config.Config{RedisAddr: "127.0.0.1:7001,127.0.0.1:7002, 127.0.0.1:7003"})
		t.Cleanup(func() { _ = rdb.Close() })
		c, ok := rdb.(*redis.ClusterClient)
		require.True(t, ok, "got %T", rdb)
		o := c.Options()
		require.Equal(t, []string{"127.0.0.1:7001", "127.0.0.1:7002", "127.0.0.1:7003"}, o.Addrs)
		require.Equal(t, redisPoolSize, o.PoolSize)
		require.Equal(t, redisDialTimeout, o.DialTimeout)
		require.Equal(t, redisReadTimeout, o.ReadTimeout)
		require.Equal(t, redisWriteTimeout, o.WriteTimeout)
		require.Equal(t, redisPoolTimeout, o.PoolTimeout)
	})
	t.Run("REDIS_CLUSTER makes one address a seed", func(t *testing.T) {
		rdb := NewRedis(config.Config{RedisAddr: "127.0.0.1:7001", RedisCluster: true})
		t.Cleanup(func() { _ = rdb.Close() })
		c, ok := rdb.(*redis.ClusterClient)
		require.True(t, ok, "got %T", rdb)
		require.Equal(t, []string{"127.0.0.1:7001"}, c.Options().Addrs)
	})
}
