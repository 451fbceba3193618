//go:build integration

package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
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
	stdout, stderr := runEmbeddedDemo(t, "--units", "10", "--buyers", "60", "--concurrency", "8",
		"--payment-timeout", "3s", "--json")
	require.Contains(t, string(stderr), "embedded go-mysql-server")

	var s struct {
		Stock     int64 `json:"stock"`
		Reserved  int64 `json:"orders_reserved"`
		Paid      int64 `json:"paid"`
		Pending   int64 `json:"still_pending"`
		Sold      int64 `json:"final_sold"`
		Oversold  int64 `json:"oversold"`
		Undersold int64 `json:"undersold"`
	}
	require.NoError(t, json.Unmarshal(stdout, &s), string(stdout))
	require.EqualValues(t, 10, s.Stock)
	require.Positive(t, s.Paid, string(stdout))
	require.EqualValues(t, s.Paid, s.Sold, string(stdout))
	require.Zero(t, s.Pending, string(stdout))
	require.Zero(t, s.Oversold, string(stdout))
	require.Zero(t, s.Undersold, string(stdout))
}

// TestDemoQueued runs `demo --queue` on the embedded stack: a sale through
// a fair queue (pre-queue, the shuffle at the open, passes, the waitlist),
// closed once the crowd is done, its workflow reporting the sale and
// removing every Redis key of it; nothing oversold or undersold.
func TestDemoQueued(t *testing.T) {
	stdout, _ := runEmbeddedDemo(t, "--queue", "--units", "10", "--buyers", "60", "--concurrency", "8",
		"--payment-timeout", "3s", "--opens-in", "4s", "--json")

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
	require.NoError(t, json.Unmarshal(stdout, &s), string(stdout))
	require.NotNil(t, s.Queue, string(stdout))
	q := s.Queue
	require.EqualValues(t, 10, s.Stock)
	require.Positive(t, s.Paid, string(stdout))
	require.EqualValues(t, s.Paid, s.Sold, string(stdout))
	require.EqualValues(t, s.Sold, q.Report.UnitsSold)
	require.Zero(t, s.Pending)
	require.Zero(t, s.Oversold, string(stdout))
	require.Zero(t, s.Undersold, string(stdout))
	require.EqualValues(t, 60, q.Report.Fairness.Queued)
	require.GreaterOrEqual(t, q.Report.Fairness.PassesIssued, int64(10))
	require.NotEmpty(t, q.WinnerRanks)
	require.Zero(t, q.RedisKeysLeft, "the sale's end removed every key")
	h := sha256.Sum256([]byte(q.Seed))
	require.Equal(t, q.SeedHash, hex.EncodeToString(h[:]))
	require.True(t, strings.HasPrefix(q.SaleWorkflow, "sale-demo-"), q.SaleWorkflow)
	require.Contains(t, s.UI, "SkuIds", "the Web UI link lists the sale by its SKU: its orders and its sale workflow")
}

// `starter demo --campaign 3`: three SKUs, half of each carved at half the
// price into a campaign whose sales open and close together; every unit of
// the allocations sells or goes back, nothing is oversold or undersold.
func TestDemoCampaign(t *testing.T) {
	stdout, _ := runEmbeddedDemo(t, "--campaign", "3", "--units", "8", "--buyers", "60", "--concurrency", "9",
		"--payment-timeout", "3s", "--opens-in", "4s", "--json")
	var s struct {
		Stock     int64 `json:"stock"`
		Sold      int64 `json:"final_sold"`
		Oversold  int64 `json:"oversold"`
		Undersold int64 `json:"undersold"`
		Campaign  *struct {
			Ended bool `json:"ended"`
			Items []struct {
				FlashPrice int64 `json:"flash_price"`
				Allocation int64 `json:"allocation"`
				Returned   int64 `json:"returned"`
				Report     struct {
					UnitsSold int64 `json:"units_sold"`
					Revenue   int64 `json:"revenue"`
				} `json:"report"`
			} `json:"items"`
			Total struct {
				UnitsSold int64 `json:"units_sold"`
				Returned  int64 `json:"returned"`
			} `json:"total"`
		} `json:"campaign"`
	}
	require.NoError(t, json.Unmarshal(stdout, &s), string(stdout))
	require.NotNil(t, s.Campaign, string(stdout))
	c := s.Campaign
	require.True(t, c.Ended)
	require.Len(t, c.Items, 3)
	require.EqualValues(t, 12, s.Stock, "three allocations of 4")
	for _, it := range c.Items {
		require.EqualValues(t, 4, it.Allocation)
		require.EqualValues(t, it.Allocation, it.Report.UnitsSold+it.Returned, "every unit sold or went back")
		require.EqualValues(t, it.Report.UnitsSold*it.FlashPrice, it.Report.Revenue, "at the flash price")
	}
	require.EqualValues(t, s.Sold, c.Total.UnitsSold)
	require.Zero(t, s.Oversold, string(stdout))
	require.Zero(t, s.Undersold, string(stdout))
}

// runEmbeddedDemo builds this command and runs `starter demo` with args on
// its embedded stack: without the addresses of the shared services in its
// environment, as on a fresh machine. It fails the test unless the demo
// exits 0, and returns what it printed on stdout and stderr.
func runEmbeddedDemo(t *testing.T, args ...string) (stdout, stderr []byte) {
	t.Helper()
	bin := testenv.BuildCommands(t, "", ".")
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if name != "TEMPORAL_ADDRESS" && name != "REDIS_ADDR" && name != "MYSQL_DSN" {
			env = append(env, kv)
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	stdout, stderr, err := testenv.RunCommand(ctx, env, bin, "starter", append([]string{"demo"}, args...)...)
	require.NoError(t, err, "demo: %s", stderr)
	return stdout, stderr
}
