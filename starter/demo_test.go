//go:build integration

package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
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

// TestDemoQueued runs `demo --queue` on the embedded stack: a sale through
// a fair queue (pre-queue, the shuffle at the open, passes, the waitlist),
// closed once the crowd is done, its workflow reporting the sale and
// removing every Redis key of it; nothing oversold or undersold.
func TestDemoQueued(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "starter")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, "build starter: %s", out)

	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "demo", "--queue", "--units", "10", "--buyers", "60", "--concurrency", "8",
		"--payment-timeout", "3s", "--opens-in", "4s", "--json")
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if name != "TEMPORAL_ADDRESS" && name != "REDIS_ADDR" && name != "MYSQL_DSN" {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "demo: %s", stderr.String())

	var s struct {
		Stock     int64  `json:"stock"`
		Paid      int64  `json:"paid"`
		Pending   int64  `json:"still_pending"`
		Sold      int64  `json:"final_sold"`
		Oversold  int64  `json:"oversold"`
		Undersold int64  `json:"undersold"`
		UI        string `json:"temporal_ui"`
		Queue     *struct {
			SaleWorkflow string `json:"sale_workflow"`
			SeedHash     string `json:"seed_hash"`
			Seed         string `json:"seed"`
			Report       struct {
				UnitsSold int64 `json:"units_sold"`
				Fairness  struct {
					Queued       int64 `json:"queued"`
					PassesIssued int64 `json:"passes_issued"`
					PassesUsed   int64 `json:"passes_used"`
				} `json:"fairness"`
			} `json:"report"`
			WinnerRanks   []int64 `json:"winner_ranks"`
			RedisKeysLeft int     `json:"redis_keys_left"`
		} `json:"queue"`
	}
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &s), stdout.String())
	require.NotNil(t, s.Queue, stdout.String())
	q := s.Queue
	require.EqualValues(t, 10, s.Stock)
	require.Positive(t, s.Paid, stdout.String())
	require.EqualValues(t, s.Paid, s.Sold, stdout.String())
	require.EqualValues(t, s.Sold, q.Report.UnitsSold)
	require.Zero(t, s.Pending)
	require.Zero(t, s.Oversold, stdout.String())
	require.Zero(t, s.Undersold, stdout.String())
	require.EqualValues(t, 60, q.Report.Fairness.Queued)
	require.GreaterOrEqual(t, q.Report.Fairness.PassesIssued, int64(10))
	require.NotEmpty(t, q.WinnerRanks)
	require.Zero(t, q.RedisKeysLeft, "the sale's end removed every key")
	h := sha256.Sum256([]byte(q.Seed))
	require.Equal(t, q.SeedHash, hex.EncodeToString(h[:]))
	require.True(t, strings.HasPrefix(q.SaleWorkflow, "sale-demo-"), q.SaleWorkflow)
	require.Contains(t, s.UI, "SkuIds", "the Web UI link lists the sale by its SKU: its orders and its sale workflow")
}
