package config

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestNewLogger(t *testing.T) {
	for level, enabled := range map[string][]slog.Level{
		"":      {slog.LevelInfo, slog.LevelWarn, slog.LevelError},
		"debug": {slog.LevelDebug, slog.LevelInfo, slog.LevelWarn, slog.LevelError},
		"WARN":  {slog.LevelWarn, slog.LevelError},
		"error": {slog.LevelError},
	} {
		t.Run(level, func(t *testing.T) {
			var buf bytes.Buffer
			l, err := NewLogger(func(k string) string { return map[string]string{"LOG_LEVEL": level}[k] }, &buf)
			require.NoError(t, err)
			var got []slog.Level
			for _, lv := range []slog.Level{slog.LevelDebug, slog.LevelInfo, slog.LevelWarn, slog.LevelError} {
				if l.Enabled(context.Background(), lv) {
					got = append(got, lv)
				}
			}
			require.Equal(t, enabled, got)
			l.Error("boom", "k", "v")
			var line map[string]any
			require.NoError(t, json.Unmarshal(buf.Bytes(), &line), "one JSON line: %s", buf.String())
			require.Equal(t, "boom", line["msg"])
		})
	}
	_, err := NewLogger(func(string) string { return "loud" }, &bytes.Buffer{})
	require.ErrorContains(t, err, "LOG_LEVEL")
}
