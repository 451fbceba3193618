//go:build integration

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flashsale/flashsale/internal/testenv"
)

// TestDemoEmbedded runs the README's demo as a fresh machine would, with no
// TEMPORAL_ADDRESS, REDIS_ADDR or MYSQL_DSN: the binary starts the Temporal
// dev server, miniredis and the embedded MySQL process itself (the last
// built from this module by devstack), sells a small sale and settles every
// order with nothing oversold or undersold.
func TestDemoEmbedded(t *testing.T) {
	bin := filepath.Join(testenv.BuildCommands(t, "", "."), "starter")

	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "demo", "--units", "10", "--buyers", "60", "--concurrency", "8",
		"--payment-timeout", "3s", "--json")
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if name != "TEMPORAL_ADDRESS" && name != "REDIS_ADDR" && name != "MYSQL_DSN" {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "demo: %s", stderr.String())
	require.Contains(t, stderr.String(), "embedded go-mysql-server")

	var s struct {
		Stock     int64 `json:"stock"`
		Reserved  int64 `json:"orders_reserved"`
		Paid      int64 `json:"paid"`
		Pending   int64 `json:"still_pending"`
		Sold      int64 `json:"final_sold"`
		Oversold  int64 `json:"oversold"`
		Undersold int64 `json:"undersold"`
	}
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &s), stdout.String())
	require.EqualValues(t, 10, s.Stock)
	require.Positive(t, s.Paid, stdout.String())
	require.EqualValues(t, s.Paid, s.Sold, stdout.String())
	require.Zero(t, s.Pending, stdout.String())
	require.Zero(t, s.Oversold, stdout.String())
	require.Zero(t, s.Undersold, stdout.String())
}
