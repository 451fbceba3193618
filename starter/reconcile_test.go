//go:build integration

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/internal/app/apptest"
	"github.com/flashsale/flashsale/internal/audit"
	"github.com/flashsale/flashsale/internal/backend"
	"github.com/flashsale/flashsale/internal/orderdb"
	"github.com/flashsale/flashsale/workflows"
)

// cliStack points the CLI at the real services through the environment,
// with its own database and task queue, and runs a worker in process.
type cliStack struct {
	b   *backend.Backend
	sku string
}

func newCLIStack(t *testing.T) *cliStack {
	t.Helper()
	sys := apptest.Start(t, apptest.Options{Name: "starter-test"})
	id, cfg, b := sys.ID, sys.Config, sys.Backend
	t.Setenv("TEMPORAL_ADDRESS", cfg.TemporalAddress)
	t.Setenv("TASK_QUEUE", cfg.TaskQueue)
	t.Setenv("REDIS_ADDR", cfg.RedisAddr)
	t.Setenv("MYSQL_DSN", cfg.MySQLDSN)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s := &cliStack{b: b, sku: "cli-" + id}
	t.Cleanup(func() {
		keys, _ := b.Redis.Keys(context.Background(), "fs:{sku:"+s.sku+"*").Result()
		if len(keys) > 0 {
			_ = b.Redis.Unlink(context.Background(), keys...).Err()
		}
	})
	_, err := b.Orders.PutSKU(ctx, flashsale.SKU{ID: s.sku, Total: 10, Price: 100, Buckets: 4, PerUserLimit: 1})
	require.NoError(t, err)
	_, err = b.Stock.Preheat(ctx, s.sku, 10, 4)
	require.NoError(t, err)
	return s
}

// starter runs the CLI in process and returns its exit status and output.
func starter(t *testing.T, args ...string) (int, []byte, []byte) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), args, &stdout, &stderr)
	return code, stdout.Bytes(), stderr.Bytes()
}

func TestCheckCommand(t *testing.T) {
	s := newCLIStack(t)
	tests := []struct {
		name     string
		fault    func(t *testing.T)
		wantCode int
		wantOK   bool
	}{
		{name: "clean: exit 0", wantOK: true},
		{
			name: "redis over mysql: exit 1, report still on stdout",
			fault: func(t *testing.T) {
				require.NoError(t, s.b.Redis.IncrBy(context.Background(), "fs:{sku:"+s.sku+":b0}:stock", 2).Err())
			},
			wantCode: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.fault != nil {
				tt.fault(t)
			}
			code, stdout, stderr := starter(t, "check", "--sku", s.sku)
			require.Equal(t, tt.wantCode, code, "stderr: %s", stderr)
			var rep audit.Report
			require.NoError(t, json.Unmarshal(stdout, &rep), "stdout is one JSON report: %s", stdout)
			require.Equal(t, tt.wantOK, rep.OK)
			if !tt.wantOK {
				require.Equal(t, audit.KindRedisOver, rep.Violations[0].Kind)
				var cerr errorOut
				require.NoError(t, json.Unmarshal(stderr, &cerr))
				require.Equal(t, codeViolated, cerr.Code)
			}
		})
	}
}

func TestReconcileCommands(t *testing.T) {
	ctx := context.Background()
	s := newCLIStack(t)

	t.Run("schedule is created, then updated in place", func(t *testing.T) {
		h := s.b.Temporal.ScheduleClient().GetHandle(ctx, workflows.ReconcileScheduleID(s.sku))
		t.Cleanup(func() { _ = h.Delete(context.Background()) })
		// Intervals no test outlives: the only run is the one --now starts.
		for _, step := range []struct {
			every       string
			wantCreated bool
			now         bool
		}{{"30m", true, false}, {"45m", false, false}, {"45m", false, true}} {
			args := []string{"reconcile", "schedule", "--sku", s.sku, "--every", step.every}
			if step.now {
				args = append(args, "--now")
			}
			code, stdout, stderr := starter(t, args...)
			require.Equal(t, 0, code, "stderr: %s", stderr)
			var out scheduleResult
			require.NoError(t, json.Unmarshal(stdout, &out))
			require.Equal(t, step.wantCreated, out.Created)
			require.Equal(t, step.now, out.Triggered)
			if step.now {
				require.Eventually(t, func() bool {
					d, err := h.Describe(ctx)
					return err == nil && d.Info.NumActions == 1
				}, time.Minute, 200*time.Millisecond, "--now started no run")
			}

			d, err := h.Describe(ctx)
			require.NoError(t, err)
			every, err := time.ParseDuration(step.every)
			require.NoError(t, err)
			require.Equal(t, every, d.Schedule.Spec.Intervals[0].Every)
			require.Equal(t, enums.SCHEDULE_OVERLAP_POLICY_SKIP, d.Schedule.Policy.Overlap)
			action, ok := d.Schedule.Action.(*client.ScheduleWorkflowAction)
			require.True(t, ok)
			require.Equal(t, workflows.ReconcileWorkflowID(s.sku), action.ID)
		}
	})

	t.Run("now corrects a drift and prints what it did", func(t *testing.T) {
		require.NoError(t, s.b.Redis.DecrBy(ctx, "fs:{sku:"+s.sku+":b1}:stock", 2).Err())
		code, stdout, stderr := starter(t, "reconcile", "now", "--sku", s.sku, "--settle", "500ms")
		require.Equal(t, 0, code, "stderr: %s", stderr)
		var res workflows.ReconcileResult
		require.NoError(t, json.Unmarshal(stdout, &res))
		require.Len(t, res.SKUs, 1)
		require.Equal(t, workflows.ActionCorrected, res.SKUs[0].Action)
		require.Equal(t, int64(2), res.SKUs[0].Applied)

		code, _, stderr = starter(t, "check", "--sku", s.sku)
		require.Equal(t, 0, code, "stderr: %s", stderr)
	})

	t.Run("usage errors exit 2", func(t *testing.T) {
		for _, args := range [][]string{{"reconcile"}, {"reconcile", "later"}, {"reconcile", "schedule", "--every", "0s"}} {
			code, _, _ := starter(t, args...)
			require.Equal(t, 2, code, "%v", args)
		}
	})
}

// TestReconcileGate forces two drifts: 50 units on a SKU of 1,000 (over the
// gate's max(10 units, 1%)) and 2 on a SKU of 100. One run corrects the 2
// and holds the 50 with a report; approving the hold lets the next run
// correct it, once.
func TestReconcileGate(t *testing.T) {
	ctx := context.Background()
	s := newCLIStack(t)
	big, small := s.sku+"-big", s.sku+"-small"
	for sku, units := range map[string][2]int64{big: {1000, 950}, small: {100, 98}} {
		_, err := s.b.Orders.PutSKU(ctx, flashsale.SKU{ID: sku, Total: units[0], Price: 100, Buckets: 4, PerUserLimit: 1})
		require.NoError(t, err)
		_, err = s.b.Stock.Preheat(ctx, sku, units[1], 4)
		require.NoError(t, err)
	}
	reconcile := func(args ...string) workflows.SKUReconcile {
		t.Helper()
		code, stdout, stderr := starter(t, args...)
		require.Equal(t, 0, code, "stderr: %s", stderr)
		var res workflows.ReconcileResult
		if args[1] == "approve" {
			var d struct {
				Run workflows.ReconcileResult `json:"run"`
			}
			require.NoError(t, json.Unmarshal(stdout, &d))
			res = d.Run
		} else {
			require.NoError(t, json.Unmarshal(stdout, &res))
		}
		require.Len(t, res.SKUs, 1)
		return res.SKUs[0]
	}

	got := reconcile("reconcile", "now", "--sku", small, "--settle", "500ms")
	require.Equal(t, workflows.ActionCorrected, got.Action)
	require.Equal(t, int64(2), got.Applied)

	got = reconcile("reconcile", "now", "--sku", big, "--settle", "500ms")
	require.Equal(t, workflows.ActionHeld, got.Action)
	require.Equal(t, int64(50), got.First.Drift)
	require.NotZero(t, got.HoldID)
	again := reconcile("reconcile", "now", "--sku", big, "--settle", "500ms")
	require.Equal(t, workflows.ActionHeld, again.Action)
	require.Equal(t, got.HoldID, again.HoldID, "the same drift is the same hold")
	snap, err := s.b.Stock.Snapshot(ctx, big)
	require.NoError(t, err)
	require.Equal(t, int64(950), snap.Units, "a held drift is not corrected")

	code, stdout, stderr := starter(t, "reconcile", "holds")
	require.Equal(t, 0, code, "stderr: %s", stderr)
	var holds []orderdb.Hold
	require.NoError(t, json.Unmarshal(stdout, &holds))
	require.Len(t, holds, 1)
	require.Equal(t, [3]any{big, int64(50), orderdb.HoldPending}, [3]any{holds[0].SKU, holds[0].Drift, holds[0].Status})
	require.Contains(t, holds[0].Report, `"journal_last_hour"`)
	require.Contains(t, holds[0].Report, `"db_available": 1000`)

	got = reconcile("reconcile", "approve", "--id", fmt.Sprint(got.HoldID), "--by", "test", "--settle", "500ms")
	require.Equal(t, workflows.ActionCorrected, got.Action)
	require.Equal(t, int64(50), got.Applied)
	snap, err = s.b.Stock.Snapshot(ctx, big)
	require.NoError(t, err)
	require.Equal(t, int64(1000), snap.Units)
	applied, err := s.b.Orders.Holds(ctx, orderdb.HoldApplied)
	require.NoError(t, err)
	require.Len(t, applied, 1)
	code, _, _ = starter(t, "reconcile", "reject", "--id", fmt.Sprint(got.HoldID))
	require.Equal(t, 1, code, "an applied hold cannot be rejected")
	for _, sku := range []string{big, small} {
		code, _, stderr = starter(t, "check", "--sku", sku)
		require.Equal(t, 0, code, "stderr: %s", stderr)
	}
}
