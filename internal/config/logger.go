package config

import (
	"fmt"
	"io"
	"log/slog"
	"strings"
)

// NewLogger is the JSON logger every process writes to w (stderr), at the
// level LOG_LEVEL names: debug, info (the default), warn or error, or an
// offset such as info+2 (slog's own syntax). debug adds the API's access
// log, one line per request.
func NewLogger(getenv func(string) string, w io.Writer) (*slog.Logger, error) {
	var level slog.Level
	if v := strings.TrimSpace(getenv("LOG_LEVEL")); v != "" {
		if err := level.UnmarshalText([]byte(v)); err != nil {
			return nil, fmt.Errorf("LOG_LEVEL=%q: want debug, info, warn or error", v)
		}
	}
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level})), nil
}
