package orders

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/temporal"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/workflows"
)

func TestCodeDown(t *testing.T) {
	for _, tt := range []struct {
		name string
		err  error
		want flashsale.Code
	}{
		{"unreachable", fmt.Errorf("failed reaching server: %w", serviceerror.NewUnavailable("connection refused")), flashsale.Unavailable},
		{"overloaded", serviceerror.NewResourceExhausted(0, "rps limit"), flashsale.Unavailable},
		{"deadline", context.DeadlineExceeded, flashsale.Unavailable},
		{"caller left", context.Canceled, flashsale.Internal},
		{"not found", serviceerror.NewNotFound("no workflow"), flashsale.Internal},
		{"coded", flashsale.Errorf(flashsale.OrderNotFound, "no"), flashsale.OrderNotFound},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := CodeDown(tt.err)
			require.Equal(t, tt.want, flashsale.ErrorCode(err))
			require.True(t, errors.Is(err, tt.err), "cause kept: %v", err)
		})
	}
	require.NoError(t, CodeDown(nil))
}

// With FairnessBySKU, an order's tasks carry its first SKU as fairness key
// beside the service's priority; without, the priority alone.
func TestPriorityOfKeysBySKU(t *testing.T) {
	in := workflows.OrderInput{OrderID: "o1", UserID: "u1", Items: []flashsale.Item{{SKU: "hot", Quantity: 1}, {SKU: "cold", Quantity: 1}}}
	s := &Service{Priority: temporal.Priority{PriorityKey: 2}}
	require.Equal(t, temporal.Priority{PriorityKey: 2}, s.priorityOf(in))
	s.FairnessBySKU = true
	require.Equal(t, temporal.Priority{PriorityKey: 2, FairnessKey: "hot"}, s.priorityOf(in))
	require.Equal(t, temporal.Priority{PriorityKey: 2}, s.priorityOf(workflows.OrderInput{OrderID: "o2"}))
}
