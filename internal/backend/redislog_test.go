//go:build integration

package backend

import (
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flashsale/flashsale/internal/requestid"
	"github.com/flashsale/flashsale/internal/testenv"
)

// TestRedisLoggerWritesJSON makes go-redis log for real (a SET with an
// expiry under a millisecond, which it truncates and warns about) against
// the real Redis, and finds the line in the process's JSON log, with the
// request id of the context that caused it.
func TestRedisLoggerWritesJSON(t *testing.T) {
	out := &testenv.Buffer{}
	SetRedisLogger(slog.New(slog.NewJSONHandler(out, nil)))
	t.Cleanup(func() { SetRedisLogger(slog.Default()) })

	rdb := testenv.Redis(t)
	key := "fs:test:redislog:" + testenv.UniqueID(t)
	ctx := requestid.NewContext(t.Context(), "req-redislog")
	require.NoError(t, rdb.Set(ctx, key, "v", 500*time.Microsecond).Err())
	t.Cleanup(func() { _ = rdb.Del(t.Context(), key).Err() })

	var line map[string]any
	for l := range strings.Lines(out.String()) {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(l), &m), "not JSON: %q", l)
		if m["logger"] == "go-redis" {
			line = m
		}
	}
	require.NotNil(t, line, "no go-redis line in %q", out.String())
	require.Equal(t, "WARN", line["level"])
	require.Contains(t, line["msg"], "truncating to 1ms")
	require.Equal(t, "req-redislog", line["request_id"])
}
