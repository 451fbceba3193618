// Package requestid carries the HTTP API's request id (X-Request-Id) from
// the request that started an order to every log line about it: the API
// puts it in the request's context, a Temporal context propagator copies it
// into the headers of what the client starts or signals, the worker reads
// it back into the workflow's and the activities' contexts, and a worker
// interceptor adds it to their loggers as request_id. A buyer's complaint
// quoting the id then finds the worker's lines too, not only the API's.
//
// The workflow code is untouched: workflow.GetLogger and activity.GetLogger
// return loggers that already carry it.
package requestid

import (
	"context"

	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/workflow"
)

// LogKey is the attribute naming the request id in every log line.
const LogKey = "request_id"

// HeaderKey is the Temporal header field holding it.
const HeaderKey = "flashsale-request-id"

// MaxLength bounds a request id: the API replaces a caller's longer one,
// and an id read from a Temporal header that is longer did not come from it.
const MaxLength = 128

type ctxKey struct{}

// NewContext returns ctx carrying id.
func NewContext(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, ctxKey{}, id)
}

// FromContext is the id ctx carries, or "".
func FromContext(ctx context.Context) string {
	id, _ := ctx.Value(ctxKey{}).(string)
	return id
}

// FromWorkflow is the id a workflow context carries (propagated from the
// header of the call that started or signalled the workflow), or "".
func FromWorkflow(ctx workflow.Context) string {
	id, _ := ctx.Value(ctxKey{}).(string)
	return id
}

// Propagator copies the request id between Go and workflow contexts and
// Temporal headers. Give it to client.Options.ContextPropagators on every
// client: the API's to send it, the worker's to receive it (and to pass it
// on to activities and child workflows).
func Propagator() workflow.ContextPropagator { return propagator{} }

type propagator struct{}

// The id is a plain string payload, so the Web UI shows it readably in the
// workflow's start event.
var dataConverter = converter.GetDefaultDataConverter()

func (propagator) Inject(ctx context.Context, w workflow.HeaderWriter) error {
	return inject(FromContext(ctx), w)
}

func (propagator) InjectFromWorkflow(ctx workflow.Context, w workflow.HeaderWriter) error {
	return inject(FromWorkflow(ctx), w)
}

func (propagator) Extract(ctx context.Context, r workflow.HeaderReader) (context.Context, error) {
	if id := extract(r); id != "" {
		return NewContext(ctx, id), nil
	}
	return ctx, nil
}

func (propagator) ExtractToWorkflow(ctx workflow.Context, r workflow.HeaderReader) (workflow.Context, error) {
	if id := extract(r); id != "" {
		return workflow.WithValue(ctx, ctxKey{}, id), nil
	}
	return ctx, nil
}

func inject(id string, w workflow.HeaderWriter) error {
	if id == "" {
		return nil
	}
	p, err := dataConverter.ToPayload(id)
	if err != nil {
		return err
	}
	w.Set(HeaderKey, p)
	return nil
}

// extract reads the id, ignoring a header it cannot read: a malformed id
// must never fail a workflow task or an activity, it only goes unlogged.
func extract(r workflow.HeaderReader) string {
	p, ok := r.Get(HeaderKey)
	if !ok || p == nil {
		return ""
	}
	var id string
	if err := dataConverter.FromPayload(p, &id); err != nil || len(id) > MaxLength {
		return ""
	}
	return id
}
