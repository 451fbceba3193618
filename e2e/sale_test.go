//go:build integration

package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/flashsale/flashsale/internal/orderdb"
	"github.com/flashsale/flashsale/internal/sale"
	"github.com/flashsale/flashsale/internal/testenv"
	"github.com/flashsale/flashsale/workflows"
)

// A fair sale's workflow (issue 23) on the real worker binary, killed with
// SIGKILL at its two delicate moments: the shuffle and the removal of the
// sale's keys.

type saleOut struct {
	State    string    `json:"state"`
	SeedHash string    `json:"seed_hash"`
	Seed     string    `json:"seed"`
	Entrants int64     `json:"entrants"`
	EndedAt  time.Time `json:"ended_at"`
	Report   *struct {
		Fairness *struct {
			Entrants     int64 `json:"entrants"`
			PassesIssued int64 `json:"passes_issued"`
		} `json:"fairness"`
	} `json:"report"`
}

// saleKey is the sale's hash in the SKU's slot (internal/sale/keys.go).
func saleKey(sku string) string { return "fs:{sku:" + sku + "}:sale" }

// enterAll enters users in sku's queue through the sale's own script, 64
// at a time.
func enterAll(t *testing.T, st *sale.Store, sku string, users []string) {
	t.Helper()
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 64 {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < int64(len(users)); i = next.Add(1) - 1 {
				if _, err := st.Enter(t.Context(), sku, users[i]); err != nil {
					t.Errorf("enter %s: %v", users[i], err)
					return
				}
			}
		})
	}
	wg.Wait()
	require.False(t, t.Failed())
}

// A worker killed (SIGKILL) while the sale's OpenSale activity is ranking
// the entrants loses no entrant and changes no rank: the retry on a new
// worker reads the same frozen entrants and the same seed, so every rank
// written before the kill stays, and the final ranks are the seed's
// shuffle of every entrant, reproducible from the revealed seed.
func TestSaleShuffleSurvivesWorkerKill(t *testing.T) {
	s := newServices(t, 15*time.Minute)
	w := s.startWorkerProcess()
	rdb := testenv.Redis(t)
	sku := "e2e-shuffle-" + testenv.UniqueID(t)
	t.Cleanup(func() { removeKeys(rdb, sku) })
	s.createSKU(sku, 10, 100, 4)
	var started saleOut
	s.starter(&started, "sale", "start", "--sku", sku, "--opens-at", "90s")
	terminateSale(t, sku)
	require.Len(t, started.SeedHash, 64)

	const n = 150_000
	users := make([]string, n)
	for i := range users {
		users[i] = fmt.Sprintf("buyer-%06d", i)
	}
	st := sale.New(rdb, nil)
	start := time.Now()
	enterAll(t, st, sku, users)
	t.Logf("%d entrants in %s", n, time.Since(start).Round(time.Millisecond))

	// Kill the worker once the shuffle has begun writing the ranks.
	deadline := time.Now().Add(2 * time.Minute)
	for rdb.HGet(t.Context(), saleKey(sku), "state").Val() != "SHUFFLING" {
		require.True(t, time.Now().Before(deadline), "the sale never began its shuffle")
		time.Sleep(time.Millisecond)
	}
	for rdb.ZCard(t.Context(), saleKey(sku)+":rank").Val() == 0 &&
		rdb.HGet(t.Context(), saleKey(sku), "state").Val() == "SHUFFLING" {
		time.Sleep(time.Millisecond)
	}
	require.NoError(t, w.cmd.Process.Kill())
	require.Error(t, w.wait(t, 10*time.Second), "killed")
	require.Equal(t, "SHUFFLING", rdb.HGet(t.Context(), saleKey(sku), "state").Val(), "killed during the shuffle, not after it")
	before, err := rdb.ZRangeWithScores(t.Context(), saleKey(sku)+":rank", 0, -1).Result()
	require.NoError(t, err)
	t.Logf("killed mid-shuffle with %d of %d ranks written", len(before), n)

	// A new worker finishes the open (the activity's attempt times out
	// and is retried).
	s.startWorkerProcess()
	require.Eventually(t, func() bool { return rdb.HGet(t.Context(), saleKey(sku), "state").Val() == "OPEN" },
		2*time.Minute, 100*time.Millisecond, "the sale opened on the new worker")
	var shown saleOut
	s.starter(&shown, "sale", "show", "--sku", sku)
	require.Equal(t, "OPEN", shown.State)
	require.EqualValues(t, n, shown.Entrants, "no entrant lost")
	h := sha256.Sum256([]byte(shown.Seed))
	require.Equal(t, started.SeedHash, hex.EncodeToString(h[:]), "the seed committed before the pre-queue opened")

	ranked, err := rdb.ZRangeWithScores(t.Context(), saleKey(sku)+":rank", 0, -1).Result()
	require.NoError(t, err)
	require.Len(t, ranked, n, "every entrant ranked, once")
	want := sale.Ranks(shown.Seed, users)
	for i, z := range ranked {
		require.Equal(t, want[i], z.Member, "rank %d", i+1)
		require.EqualValues(t, i+1, z.Score)
	}
	final := make(map[string]float64, n)
	for _, z := range ranked {
		final[z.Member.(string)] = z.Score
	}
	for _, z := range before {
		require.Equal(t, z.Score, final[z.Member.(string)], "%s's rank written before the kill changed", z.Member)
	}
	var closed saleOut
	s.starter(&closed, "sale", "close", "--sku", sku)
	require.Equal(t, "CLOSED", closed.State)
}

// A worker killed (SIGKILL) while the ended sale's keys are being removed
// leaves nothing and does nothing twice: the new worker's retry removes
// what is left, the report was recorded once before the removal began,
// the sale was marked ended once, and no key of the SKU is left in Redis.
func TestSaleEndSurvivesWorkerKill(t *testing.T) {
	s := newServices(t, 15*time.Minute)
	w := s.startWorkerProcess()
	rdb := testenv.Redis(t)
	sku := "e2e-end-" + testenv.UniqueID(t)
	t.Cleanup(func() { removeKeys(rdb, sku) })
	s.createSKU(sku, 10, 100, 4)
	var started saleOut
	s.starter(&started, "sale", "start", "--sku", sku, "--opens-at", "1s")
	terminateSale(t, sku)
	st := sale.New(rdb, func(context.Context, string) (int64, error) { return 10, nil })
	users := make([]string, 20)
	for i := range users {
		users[i] = fmt.Sprintf("buyer-%02d", i)
	}
	enterAll(t, st, sku, users)
	require.Eventually(t, func() bool { return rdb.HGet(t.Context(), saleKey(sku), "state").Val() == "OPEN" },
		time.Minute, 100*time.Millisecond)
	p, err := st.PlaceOf(t.Context(), sku, users[0]) // ten units: ten passes go out
	require.NoError(t, err)
	require.EqualValues(t, 10, p.Serving)

	// Keys of the SKU's slot in the per-buyer counts' shape, so the
	// removal takes long enough to be cut in the middle.
	const filler = 100_000
	for i := 0; i < filler; i += 1000 {
		_, err := rdb.Pipelined(t.Context(), func(pipe redis.Pipeliner) error {
			for j := i; j < i+1000; j++ {
				pipe.Set(t.Context(), fmt.Sprintf("fs:{sku:%s}:held:filler-%06d", sku, j), "0:0", 0)
			}
			return nil
		})
		require.NoError(t, err)
	}
	var closed saleOut
	s.starter(&closed, "sale", "close", "--sku", sku)
	require.Equal(t, "CLOSED", closed.State)

	// The bucket count goes first: kill the worker as soon as it is gone,
	// with the rest of the keys still there.
	deadline := time.Now().Add(2 * time.Minute)
	bucketsKey := "fs:{sku:" + sku + "}:buckets"
	for rdb.Exists(t.Context(), bucketsKey).Val() == 1 {
		require.True(t, time.Now().Before(deadline), "the sale's end never began removing its keys")
		time.Sleep(time.Millisecond)
	}
	require.NoError(t, w.cmd.Process.Kill())
	require.Error(t, w.wait(t, 10*time.Second), "killed")
	left := len(keysOf(t, rdb, sku))
	require.Positive(t, left, "killed in the middle of the removal")
	t.Logf("killed with %d of the sale's keys left", left)
	db, err := orderdb.Open(t.Context(), s.getenv("MYSQL_DSN"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	endedAt, err := db.SaleEndedAt(t.Context(), sku)
	require.NoError(t, err)
	require.False(t, endedAt.IsZero(), "marked ended before the removal began")

	s.startWorkerProcess()
	c, err := client.Dial(client.Options{HostPort: testenv.TemporalAddress()})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	var end workflows.SaleView
	require.NoError(t, c.GetWorkflow(ctx, workflows.SaleWorkflowID(sku), "").Get(ctx, &end))
	require.Empty(t, keysOf(t, rdb, sku), "no key of the sale is left in Redis")
	require.True(t, end.EndedAt.Equal(endedAt), "the end recorded once: %s, then %s", endedAt, end.EndedAt)
	again, err := db.SaleEndedAt(t.Context(), sku)
	require.NoError(t, err)
	require.True(t, again.Equal(endedAt), "marked ended once")
	require.NotNil(t, end.Report)
	require.NotNil(t, end.Report.Fairness)
	require.EqualValues(t, 20, end.Report.Fairness.Entrants)
	require.EqualValues(t, 10, end.Report.Fairness.PassesIssued)

	// The history: the report and the mark once each, the removal retried
	// by the new worker and completed once.
	scheduled, completed, attempts := map[string]int{}, map[string]int{}, map[string]int32{}
	names := map[int64]string{}
	iter := c.GetWorkflowHistory(ctx, workflows.SaleWorkflowID(sku), "", false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for iter.HasNext() {
		e, err := iter.Next()
		require.NoError(t, err)
		switch e.GetEventType() {
		case enums.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
			name := e.GetActivityTaskScheduledEventAttributes().GetActivityType().GetName()
			names[e.GetEventId()] = name
			scheduled[name]++
		case enums.EVENT_TYPE_ACTIVITY_TASK_STARTED:
			a := e.GetActivityTaskStartedEventAttributes()
			attempts[names[a.GetScheduledEventId()]] = a.GetAttempt()
		case enums.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
			completed[names[e.GetActivityTaskCompletedEventAttributes().GetScheduledEventId()]]++
		}
	}
	for _, a := range []string{"ReportSale", "EndSale", "RemoveSaleKeys"} {
		require.Equal(t, 1, scheduled[a], "%s scheduled once", a)
		require.Equal(t, 1, completed[a], "%s completed once", a)
	}
	require.GreaterOrEqual(t, attempts["RemoveSaleKeys"], int32(2), "the removal cut by the kill was retried")
	var check struct {
		OK bool `json:"ok"`
	}
	s.starter(&check, "check", "--sku", sku)
	require.True(t, check.OK)
}

// terminateSale ends sku's sale workflow when the test ends, whatever it
// reached: its task queue's worker is gone then.
func terminateSale(t *testing.T, sku string) {
	t.Cleanup(func() {
		c, err := client.Dial(client.Options{HostPort: testenv.TemporalAddress()})
		if err != nil {
			return
		}
		defer c.Close()
		_ = c.TerminateWorkflow(context.Background(), workflows.SaleWorkflowID(sku), "", "test over")
	})
}

// keysOf lists the Redis keys of sku's hash tags.
func keysOf(t *testing.T, rdb redis.UniversalClient, sku string) []string {
	t.Helper()
	var keys []string
	for _, pattern := range []string{"fs:{sku:" + sku + "}*", "fs:{sku:" + sku + ":b*"} {
		iter := rdb.Scan(t.Context(), 0, pattern, 1000).Iterator()
		for iter.Next(t.Context()) {
			keys = append(keys, iter.Val())
		}
		require.NoError(t, iter.Err())
	}
	return keys
}

// removeKeys removes what a test left of sku in Redis.
func removeKeys(rdb redis.UniversalClient, sku string) {
	ctx := context.Background()
	for _, pattern := range []string{"fs:{sku:" + sku + "}*", "fs:{sku:" + sku + ":b*"} {
		iter := rdb.Scan(ctx, 0, pattern, 1000).Iterator()
		for iter.Next(ctx) {
			if strings.Contains(iter.Val(), sku) {
				_ = rdb.Unlink(ctx, iter.Val()).Err()
			}
		}
	}
}
