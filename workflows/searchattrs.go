package workflows

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
)

// ErrSearchAttributes: the namespace lacks search attributes the order
// workflow sets, and this process may not (or could not) create them.
var ErrSearchAttributes = errors.New("search attributes missing")

// searchAttrsWait bounds how long EnsureSearchAttributes waits for attributes
// it created to be listed (visibility stores apply them asynchronously).
const searchAttrsWait = 30 * time.Second

// EnsureSearchAttributes makes sure namespace has every search attribute
// the order workflow sets (SearchAttributes), with the right
// type. Missing ones are created when this client may; otherwise the error
// (wrapping ErrSearchAttributes) names them and the command that creates
// them. "Already exists" from a concurrent creator counts as success. Run it
// before the worker polls: without it, every buy would fail at the start of
// its workflow.
func EnsureSearchAttributes(ctx context.Context, c client.Client, namespace string) error {
	missing, err := missingSearchAttributes(ctx, c, namespace)
	if err != nil || len(missing) == 0 {
		return err
	}
	add := make(map[string]enums.IndexedValueType, len(missing))
	for _, k := range missing {
		add[k.GetName()] = k.GetValueType()
	}
	_, err = c.OperatorService().AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{
		Namespace: namespace, SearchAttributes: add,
	})
	if _, exists := errors.AsType[*serviceerror.AlreadyExists](err); err != nil && !exists {
		return fmt.Errorf("%w on namespace %s: %s; create them with %s (could not: %w)",
			ErrSearchAttributes, namespace, describe(missing), createCommand(namespace, missing), err)
	}
	deadline := time.Now().Add(searchAttrsWait)
	for {
		missing, err = missingSearchAttributes(ctx, c, namespace)
		if err != nil || len(missing) == 0 {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w on namespace %s: %s still not listed %v after creating them",
				ErrSearchAttributes, namespace, describe(missing), searchAttrsWait)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// CheckSearchAttributes fails (wrapping ErrSearchAttributes) when
// namespace lacks a search attribute the workflows set, naming them and
// the command that creates them; it creates nothing.
func CheckSearchAttributes(ctx context.Context, c client.Client, namespace string) error {
	missing, err := missingSearchAttributes(ctx, c, namespace)
	if err != nil || len(missing) == 0 {
		return err
	}
	return fmt.Errorf("%w on namespace %s: %s; create them with %s",
		ErrSearchAttributes, namespace, describe(missing), createCommand(namespace, missing))
}

// missingSearchAttributes lists the order workflow's attributes namespace
// lacks. An attribute of the right name and another type cannot be fixed
// here: it is an error.
func missingSearchAttributes(ctx context.Context, c client.Client, namespace string) ([]temporal.SearchAttributeKey, error) {
	resp, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: namespace})
	if err != nil {
		return nil, fmt.Errorf("list search attributes of namespace %s: %w", namespace, err)
	}
	var missing []temporal.SearchAttributeKey
	for _, k := range SearchAttributes {
		typ, ok := resp.GetCustomAttributes()[k.GetName()]
		switch {
		case !ok:
			missing = append(missing, k)
		case typ != k.GetValueType():
			return nil, fmt.Errorf("%w: namespace %s has %s as %s, the order workflow needs %s",
				ErrSearchAttributes, namespace, k.GetName(), typ, k.GetValueType())
		}
	}
	return missing, nil
}

func describe(keys []temporal.SearchAttributeKey) string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = fmt.Sprintf("%s (%s)", k.GetName(), k.GetValueType())
	}
	slices.Sort(out)
	return strings.Join(out, ", ")
}

func createCommand(namespace string, keys []temporal.SearchAttributeKey) string {
	cmd := "`temporal operator search-attribute create --namespace " + namespace
	for _, k := range keys {
		cmd += " --name " + k.GetName() + " --type " + k.GetValueType().String()
	}
	return cmd + "`"
}
