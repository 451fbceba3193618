package requestid

import (
	"context"

	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/workflow"
)

// NewWorkerInterceptor returns the worker interceptor that adds request_id
// to the loggers workflow.GetLogger and activity.GetLogger return, when the
// workflow or activity was started from a request (see Propagator).
// Workflows and activities started without one log as before.
func NewWorkerInterceptor() interceptor.WorkerInterceptor { return &workerInterceptor{} }

type workerInterceptor struct {
	interceptor.WorkerInterceptorBase
}

func (*workerInterceptor) InterceptWorkflow(ctx workflow.Context, next interceptor.WorkflowInboundInterceptor) interceptor.WorkflowInboundInterceptor {
	return &workflowInbound{WorkflowInboundInterceptorBase: interceptor.WorkflowInboundInterceptorBase{Next: next}}
}

func (*workerInterceptor) InterceptActivity(ctx context.Context, next interceptor.ActivityInboundInterceptor) interceptor.ActivityInboundInterceptor {
	return &activityInbound{ActivityInboundInterceptorBase: interceptor.ActivityInboundInterceptorBase{Next: next}}
}

type workflowInbound struct {
	interceptor.WorkflowInboundInterceptorBase
}

func (w *workflowInbound) Init(outbound interceptor.WorkflowOutboundInterceptor) error {
	return w.Next.Init(&workflowOutbound{WorkflowOutboundInterceptorBase: interceptor.WorkflowOutboundInterceptorBase{Next: outbound}})
}

type workflowOutbound struct {
	interceptor.WorkflowOutboundInterceptorBase
}

// GetLogger reads the id from the context the workflow code asks with,
// which descends from the workflow's root context where the propagator put
// it. The SDK's logger underneath stays replay-aware.
func (w *workflowOutbound) GetLogger(ctx workflow.Context) log.Logger {
	l := w.Next.GetLogger(ctx)
	if id := FromWorkflow(ctx); id != "" {
		return log.With(l, LogKey, id)
	}
	return l
}

type activityInbound struct {
	interceptor.ActivityInboundInterceptorBase
}

func (a *activityInbound) Init(outbound interceptor.ActivityOutboundInterceptor) error {
	return a.Next.Init(&activityOutbound{ActivityOutboundInterceptorBase: interceptor.ActivityOutboundInterceptorBase{Next: outbound}})
}

type activityOutbound struct {
	interceptor.ActivityOutboundInterceptorBase
}

func (a *activityOutbound) GetLogger(ctx context.Context) log.Logger {
	l := a.Next.GetLogger(ctx)
	if id := FromContext(ctx); id != "" {
		return log.With(l, LogKey, id)
	}
	return l
}
