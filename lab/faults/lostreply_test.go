//go:build faults

package faults

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/flashsale/flashsale/internal/testenv"
)

// lostReplyOdds is the worker's FLASHSALE_FAULT_LOSE_REPLY setting for case
// 6 (see worker/lostreply_faults.go): the probability that the first
// attempt's successful reply is lost. ReserveStock and CreateOrder are the
// deduct and create (local activities); CloseOrder and ReleaseStock are the
// restock compensation, run for orders cancelled or left unpaid.
var lostReplyOdds = map[string]string{
	"ReserveStock": "0.3",
	"CreateOrder":  "0.3",
	"CloseOrder":   "0.5",
	"ReleaseStock": "0.5",
}

// TestLostReplies is case 6: an activity does its work and its reply is
// lost, so the attempt times out and Temporal retries it. The retry must find
// the work done: no second deduction, no second order row or freeze, no
// second release.
func TestLostReplies(t *testing.T) {
	var spec bytes.Buffer
	for _, name := range slices.Sorted(maps.Keys(lostReplyOdds)) {
		if spec.Len() > 0 {
			spec.WriteByte(',')
		}
		spec.WriteString(name + "=" + lostReplyOdds[name])
	}
	runCase(t, caseSpec{
		name: "6 activity reply lost (deduct, create, restock)", units: 20, buyers: 80,
		opts: stackOptions{workerEnv: []string{"FLASHSALE_FAULT_LOSE_REPLY=" + spec.String()}},
		beforeC: func(ctx context.Context, sl *sale) {
			// Compensations still run after the crowd is done (orders left
			// to expire); let them finish so every injection is counted.
			sl.s.settleAndCheck(ctx, sl.sku, 3*time.Minute)
			lost := lostReplies(sl.t, sl.s.logBuffer("worker"))
			for _, n := range lost {
				sl.faults += int64(n)
			}
			sl.t.Logf("replies lost, by activity: %v", lost)
			// A case where an activity never lost a reply proves nothing
			// about that activity.
			for name := range lostReplyOdds {
				if lost[name] == 0 {
					sl.t.Errorf("no %s reply was lost", name)
				}
			}
		},
	})
}

// lostReplies counts the worker's "fault injected: reply lost" lines by
// activity type.
func lostReplies(t *testing.T, l *testenv.Buffer) map[string]int {
	raw := l.Bytes()
	out := map[string]int{}
	for line := range bytes.Lines(raw) {
		if !bytes.Contains(line, []byte("fault injected: reply lost")) {
			continue
		}
		var e struct {
			Msg          string `json:"msg"`
			ActivityType string `json:"activity_type"`
		}
		if err := json.Unmarshal(line, &e); err != nil || e.Msg != "fault injected: reply lost" || e.ActivityType == "" {
			t.Errorf("unreadable injection line %q: %v", line, err)
			continue
		}
		out[e.ActivityType]++
	}
	return out
}
