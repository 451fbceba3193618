//go:build integration

package e2e

import (
	"context"
	"database/sql"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"

	"github.com/flashsale/flashsale/internal/testenv"
	"github.com/flashsale/flashsale/workflows"
)

// TestWorkerFinishesWhatItHoldsOnSIGTERM sends SIGTERM to the real worker
// binary while it holds an order's CloseOrder, held up by a row lock the
// test keeps on the order in MySQL, then lets the lock go. The worker must
// finish the step it holds and report it before it exits (exit status 0),
// so the order's history shows the step done once, on its first attempt.
// With the SDK's default stop timeout (0 s) the step was cancelled on the
// spot and run again: a second attempt in the history.
//
// Both ways an order settles are tried: CloseOrder as a local activity
// inside the workflow task (its result recorded in a marker when the task
// completes, so the worker must keep the task until the local activity
// answers), and, after the local attempts gave up (10 s), as a regular
// activity (ActivityTaskStarted's attempt).
func TestWorkerFinishesWhatItHoldsOnSIGTERM(t *testing.T) {
	s := newServices(t, 15*time.Minute)
	sku := "e2e-sigterm-" + testenv.UniqueID(t)
	tc, err := client.Dial(client.Options{HostPort: testenv.TemporalAddress()})
	require.NoError(t, err)
	t.Cleanup(tc.Close)
	db, err := sql.Open("mysql", s.getenv("MYSQL_DSN"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })

	w := s.startWorkerProcess()
	s.createSKU(sku, 2, 100, 2)

	t.Run("local activity in the workflow task", func(t *testing.T) {
		id := "sigterm-la-" + sku
		held := s.holdOrderRow(t, db, tc, sku, id)
		// The worker took the workflow task that handles the cancel: its
		// local CloseOrder is running, blocked on the lock (5 s a try).
		require.Eventually(t, func() bool {
			signaled := false
			for _, e := range history(t, tc, id) {
				signaled = signaled || e.GetEventType() == enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED
				if signaled && e.GetEventType() == enumspb.EVENT_TYPE_WORKFLOW_TASK_STARTED {
					return true
				}
			}
			return false
		}, 10*time.Second, 20*time.Millisecond, "the cancel's workflow task started")
		require.NoError(t, w.cmd.Process.Signal(syscall.SIGTERM))
		// Still running: it holds the workflow task and its local activity.
		// (A sleep: the test waits for something not to happen. Short: the
		// local attempt's own timeout is 5 s.)
		time.Sleep(time.Second)
		require.Nil(t, w.exited(), "worker exited while holding a task:\n%s", w.logs.String())
		held.release()
		require.NoError(t, w.wait(t, 30*time.Second), "worker log:\n%s", w.logs.String())

		events := history(t, tc, id)
		attempts := localActivityAttempts(t, events, "CloseOrder")
		require.Equal(t, []int32{1}, attempts, "CloseOrder's markers: one, first attempt\n%s", w.logs.String())
		for _, e := range events {
			require.NotContains(t, []enumspb.EventType{
				enumspb.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT, enumspb.EVENT_TYPE_WORKFLOW_TASK_FAILED,
			}, e.GetEventType(), "the stopping worker dropped its workflow task (event %d)", e.GetEventId())
			if a := e.GetActivityTaskScheduledEventAttributes(); a != nil {
				require.NotEqual(t, "CloseOrder", a.GetActivityType().GetName(), "CloseOrder fell back to an activity")
			}
		}
	})

	t.Run("regular activity after the local attempts", func(t *testing.T) {
		w = s.startWorkerProcess()
		id := "sigterm-act-" + sku
		held := s.holdOrderRow(t, db, tc, sku, id)
		// The local attempts give up after 10 s; CloseOrder then runs as an
		// activity, blocked on the same lock.
		var attempt int32
		require.Eventually(t, func() bool {
			d, err := tc.DescribeWorkflow(context.Background(), workflows.OrderWorkflowID(id), "")
			require.NoError(t, err)
			for _, p := range d.RawResponse.GetPendingActivities() {
				if p.GetActivityType().GetName() == "CloseOrder" && p.GetState() == enumspb.PENDING_ACTIVITY_STATE_STARTED {
					attempt = p.GetAttempt()
					return true
				}
			}
			return false
		}, 30*time.Second, 100*time.Millisecond, "CloseOrder running as an activity")
		require.Equal(t, int32(1), attempt)
		requireLockWaiter(t, db)
		require.NoError(t, w.cmd.Process.Signal(syscall.SIGTERM))
		time.Sleep(2 * time.Second)
		require.Nil(t, w.exited(), "worker exited while holding an activity:\n%s", w.logs.String())
		held.release()
		require.NoError(t, w.wait(t, 30*time.Second), "worker log:\n%s", w.logs.String())

		// Another worker finishes the order (ReleaseStock is the next
		// workflow task's).
		s.startWorkerProcess()
		eventually(t, "order cancelled", 30*time.Second, func() bool { return s.status(id).Status == "CANCELLED" })
		events := history(t, tc, id)
		var scheduled []int64
		for _, e := range events {
			if a := e.GetActivityTaskScheduledEventAttributes(); a != nil && a.GetActivityType().GetName() == "CloseOrder" {
				scheduled = append(scheduled, e.GetEventId())
			}
		}
		require.Len(t, scheduled, 1, "CloseOrder scheduled once as an activity")
		var started []int32
		completed := 0
		for _, e := range events {
			if a := e.GetActivityTaskStartedEventAttributes(); a != nil && a.GetScheduledEventId() == scheduled[0] {
				started = append(started, a.GetAttempt())
			}
			if a := e.GetActivityTaskCompletedEventAttributes(); a != nil && a.GetScheduledEventId() == scheduled[0] {
				completed++
			}
		}
		require.Equal(t, []int32{1}, started, "CloseOrder started once, on attempt 1")
		require.Equal(t, 1, completed, "CloseOrder completed")
	})
}

// worker is a worker process the test signals.
type worker struct {
	cmd  *exec.Cmd
	logs *testenv.Buffer
	done chan error
}

func (s *stack) startWorkerProcess() *worker {
	s.t.Helper()
	cmd := exec.Command(filepath.Join(bin, "worker"))
	cmd.Env = s.env
	w := &worker{cmd: cmd, logs: &testenv.Buffer{}, done: make(chan error, 1)}
	cmd.Stderr = w.logs
	require.NoError(s.t, cmd.Start())
	go func() { w.done <- cmd.Wait() }()
	s.t.Cleanup(func() {
		_ = cmd.Process.Kill()
		// Killed, or already exited (the test checked how).
		if err := <-w.done; err != nil {
			s.t.Logf("worker: %v", err)
		}
		if s.t.Failed() {
			s.t.Logf("worker log:\n%s", w.logs.String())
		}
	})
	// Polling before the test moves on.
	require.Eventually(s.t, func() bool { return strings.Contains(w.logs.String(), `"worker started"`) },
		60*time.Second, 50*time.Millisecond, "worker started")
	return w
}

// exited is the process's exit, or nil while it runs.
func (w *worker) exited() error {
	select {
	case err := <-w.done:
		w.done <- err
		if err == nil {
			return errExitedZero
		}
		return err
	default:
		return nil
	}
}

var errExitedZero = exitedError("exited with status 0")

type exitedError string

func (e exitedError) Error() string { return string(e) }

// wait waits for the process to exit and returns how it did.
func (w *worker) wait(t *testing.T, timeout time.Duration) error {
	t.Helper()
	select {
	case err := <-w.done:
		w.done <- err
		return err
	case <-time.After(timeout):
		t.Fatalf("worker still running %s after SIGTERM:\n%s", timeout, w.logs.String())
		return nil
	}
}

func (s *stack) getenv(key string) string {
	for _, kv := range s.env {
		if v, ok := strings.CutPrefix(kv, key+"="); ok {
			return v
		}
	}
	s.t.Fatalf("%s not in the stack's environment", key)
	return ""
}

type heldRow struct {
	tx *sql.Tx
}

func (h heldRow) release() { _ = h.tx.Commit() }

// holdOrderRow places order id, locks its row in MySQL, and cancels it:
// the order's CloseOrder then waits on the lock until release.
func (s *stack) holdOrderRow(t *testing.T, db *sql.DB, tc client.Client, sku, id string) heldRow {
	t.Helper()
	var o orderOut
	s.starter(&o, "order", "--user", "u-"+id, "--sku", sku, "--order-id", id)
	require.Equal(t, "PENDING_PAYMENT", o.Status)
	tx, err := db.Begin()
	require.NoError(t, err)
	t.Cleanup(func() { _ = tx.Rollback() })
	var status string
	require.NoError(t, tx.QueryRow("SELECT status FROM orders WHERE order_id = ? FOR UPDATE", id).Scan(&status))
	require.NoError(t, tc.SignalWorkflow(context.Background(), workflows.OrderWorkflowID(id), "", workflows.SignalCancel,
		workflows.CancelRequest{Reason: "sigterm test"}))
	return heldRow{tx: tx}
}

// requireLockWaiter waits until a transaction of the worker waits on the
// test's lock: the activity is in flight.
func requireLockWaiter(t *testing.T, db *sql.DB) {
	t.Helper()
	require.Eventually(t, func() bool {
		var n int
		err := db.QueryRow(`SELECT COUNT(*) FROM information_schema.INNODB_TRX t
			JOIN information_schema.PROCESSLIST p ON p.ID = t.trx_mysql_thread_id
			WHERE t.trx_state = 'LOCK WAIT' AND p.DB = DATABASE()`).Scan(&n)
		require.NoError(t, err)
		return n > 0
	}, 20*time.Second, 50*time.Millisecond, "the worker waiting on the row lock")
}

func history(t *testing.T, tc client.Client, id string) []*historypb.HistoryEvent {
	t.Helper()
	var out []*historypb.HistoryEvent
	it := tc.GetWorkflowHistory(context.Background(), workflows.OrderWorkflowID(id), "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		e, err := it.Next()
		require.NoError(t, err)
		out = append(out, e)
	}
	return out
}

// localActivityAttempts returns the attempt recorded in each local
// activity marker of activityType, in history order.
func localActivityAttempts(t *testing.T, events []*historypb.HistoryEvent, activityType string) []int32 {
	t.Helper()
	var out []int32
	for _, e := range events {
		m := e.GetMarkerRecordedEventAttributes()
		if m == nil || m.GetMarkerName() != "LocalActivity" {
			continue
		}
		data := m.GetDetails()["data"].GetPayloads()
		require.NotEmpty(t, data)
		var d struct {
			ActivityType string
			Attempt      int32
		}
		require.NoError(t, json.Unmarshal(data[0].GetData(), &d))
		if d.ActivityType == activityType {
			out = append(out, d.Attempt)
		}
	}
	return out
}
