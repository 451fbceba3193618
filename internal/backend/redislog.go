package backend

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/redis/go-redis/v9"

	"github.com/flashsale/flashsale/internal/requestid"
)

// SetRedisLogger sends go-redis's own log lines (dropped connections,
// pool and Pub/Sub reconnects, cluster topology reloads) to l, as JSON
// like every other line of the process, instead of go-redis's default
// plain-text logger on stderr. go-redis has one logger per process, so
// call it once, at start, before the first client.
func SetRedisLogger(l *slog.Logger) { redis.SetLogger(redisLogger{l: l}) }

// redisLogger adapts go-redis's Printf logger to slog. go-redis logs no
// level and writes only when something went wrong or changed under it, so
// every line is WARN; "logger":"go-redis" tells them from ours.
type redisLogger struct{ l *slog.Logger }

func (r redisLogger) Printf(ctx context.Context, format string, v ...any) {
	if ctx == nil {
		ctx = context.Background()
	}
	attrs := []any{"logger", "go-redis"}
	// go-redis passes the caller's context: a line caused by a buy names
	// its request.
	if id := requestid.FromContext(ctx); id != "" {
		attrs = append(attrs, requestid.LogKey, id)
	}
	r.l.Log(ctx, slog.LevelWarn, fmt.Sprintf(format, v...), attrs...)
}
