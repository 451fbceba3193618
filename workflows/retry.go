package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/flashsale/flashsale/activities/contract"
)

// The attempt timeouts the worker's stop timeout is sized from
// (StopTimeout): a worker told to stop lets the longest of these finish.
const (
	// reserveBudget bounds the reservation's local activities, retries
	// included; the workflow task waits for them all that time.
	reserveBudget = 30 * time.Second
	// settleAttempt is one attempt of a settlement activity (ConfirmPayment,
	// RecordRefund, CloseOrder, the waitlist offer, ReleaseStock) once it
	// runs as a regular activity.
	settleAttempt = 10 * time.Second
)

// reserveOptions are the options of the reservation's local activities.
// Redis and MySQL answer in milliseconds; a slow call is a stuck
// connection, retried quickly. The overall bound keeps a buyer from waiting
// on an answer for long: past it the order is rejected as UNAVAILABLE and
// the caller can retry with the same order id.
func reserveOptions(ctx workflow.Context) workflow.Context {
	return workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout:    5 * time.Second,
		ScheduleToCloseTimeout: reserveBudget,
		RetryPolicy:            backoff(50*time.Millisecond, 2*time.Second),
	})
}

func (o *order) activityOptions(ctx workflow.Context, summary string) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		// Settlement must eventually happen, however long a dependency is
		// down: no attempt limit, backoff capped at a minute.
		StartToCloseTimeout: settleAttempt,
		RetryPolicy:         backoff(200*time.Millisecond, time.Minute),
		Summary:             summary,
	})
}

// backoff is the retry policy of every activity here: exponential from
// initial, capped at maxInterval, and never retrying the activities' business
// answers. Each caller picks the intervals for its activity.
func backoff(initial, maxInterval time.Duration) *temporal.RetryPolicy {
	return &temporal.RetryPolicy{
		InitialInterval:        initial,
		BackoffCoefficient:     2,
		MaximumInterval:        maxInterval,
		NonRetryableErrorTypes: contract.NonRetryableErrorTypes,
	}
}

// exec runs a compensation step that must eventually happen: inside the
// workflow task when the order settles there (inTaskFirst), otherwise, or when
// that got no answer, as an activity retried without limit.
func (o *order) exec(ctx workflow.Context, summary string, activity, in, out any) error {
	return o.inTaskFirst(ctx, summary, activity, in, out, func(ctx workflow.Context) error {
		return workflow.ExecuteActivity(o.activityOptions(ctx, summary), activity, in).Get(ctx, out)
	})
}
