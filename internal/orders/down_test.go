package orders_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/internal/orders"
)

// Temporal's answers that decided nothing are Unavailable (503, retry as
// it is); anything else stays what it was. The update refused because the
// order's first workflow task failed under load was a 500 before.
func TestCodeDownMakesUndecidedAnswersUnavailable(t *testing.T) {
	undecided := []error{
		serviceerror.NewUnavailable("frontend down"),
		serviceerror.NewDeadlineExceeded("out of time"),
		serviceerror.NewResourceExhausted(0, "busy"),
		serviceerror.NewWorkflowNotReady("Unable to perform workflow execution update due to Workflow Task in failed state."),
	}
	for _, err := range undecided {
		got := orders.CodeDown(fmt.Errorf("place order o1: %w", err))
		require.Equal(t, flashsale.Unavailable, flashsale.ErrorCode(got), "%v", err)
		require.ErrorIs(t, got, err, "the cause stays wrapped")
	}
	other := errors.New("boom")
	require.Equal(t, flashsale.Internal, flashsale.ErrorCode(orders.CodeDown(other)))
	require.Same(t, other, orders.CodeDown(other))
}
