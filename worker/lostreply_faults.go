//go:build faults

// This file exists only in the fault-injection build of the worker
// (go build -tags faults), which the fault suite (faults/) runs. Production
// builds cannot lose a reply on purpose.

package main

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/interceptor"
)

// loseReplyEnv names, per activity type, the probability that a successful
// reply is lost, e.g. "ReserveStock=0.3,CreateOrder=0.3,ReleaseStock=0.5".
const loseReplyEnv = "FLASHSALE_FAULT_LOSE_REPLY"

// loseReplyMaxAttempt bounds the attempts whose reply may be lost: only the
// first, so every retry answers and orders finish within their timeouts
// (one lost reply costs a StartToClose timeout, 5s for a local activity).
const loseReplyMaxAttempt = 1

func init() {
	spec := os.Getenv(loseReplyEnv)
	if spec == "" {
		return
	}
	odds, err := parseLoseReply(spec)
	if err != nil {
		// A fault build told to inject something it cannot parse must not
		// run a case that would then prove nothing.
		fmt.Fprintf(os.Stderr, "%s=%q: %v\n", loseReplyEnv, spec, err)
		os.Exit(2)
	}
	extraInterceptors = append(extraInterceptors, &loseReply{
		odds:   odds,
		logger: slog.New(slog.NewJSONHandler(os.Stderr, nil)),
	})
}

func parseLoseReply(spec string) (map[string]float64, error) {
	odds := map[string]float64{}
	for part := range strings.SplitSeq(spec, ",") {
		name, p, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok || name == "" {
			return nil, fmt.Errorf("%q: want ActivityType=probability", part)
		}
		f, err := strconv.ParseFloat(p, 64)
		if err != nil || f < 0 || f > 1 {
			return nil, fmt.Errorf("%q: probability must be between 0 and 1", part)
		}
		odds[name] = f
	}
	return odds, nil
}

// loseReply is a worker interceptor that lets an activity do its work and
// then, with the configured probability, withholds the reply: it waits until
// the attempt's context ends (the StartToClose timeout), as if the answer had
// been lost on the way back, so Temporal times the attempt out and retries
// it. The retry must find the work done and not do it twice. The SDK runs
// local activities through the same interceptors, so ReserveStock and
// CreateOrder are covered as well as the regular activities.
type loseReply struct {
	interceptor.WorkerInterceptorBase
	odds   map[string]float64
	logger *slog.Logger
}

func (l *loseReply) InterceptActivity(_ context.Context, next interceptor.ActivityInboundInterceptor) interceptor.ActivityInboundInterceptor {
	i := &loseReplyActivity{root: l}
	i.Next = next
	return i
}

type loseReplyActivity struct {
	interceptor.ActivityInboundInterceptorBase
	root *loseReply
}

func (i *loseReplyActivity) ExecuteActivity(ctx context.Context, in *interceptor.ExecuteActivityInput) (any, error) {
	res, err := i.Next.ExecuteActivity(ctx, in)
	info := activity.GetInfo(ctx)
	p := i.root.odds[info.ActivityType.Name]
	// Only work that was done has a reply worth losing; a failed attempt is
	// retried anyway.
	if err != nil || p == 0 || info.Attempt > loseReplyMaxAttempt || rand.Float64() >= p {
		return res, err
	}
	// The suite counts these lines in the worker log, one per injection.
	i.root.logger.Warn("fault injected: reply lost",
		"activity_type", info.ActivityType.Name, "workflow_id", info.WorkflowExecution.ID,
		"attempt", info.Attempt, "local", info.IsLocalActivity, "deadline", info.Deadline)
	<-ctx.Done()
	return nil, ctx.Err()
}
