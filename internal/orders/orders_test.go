package orders

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"

	"github.com/flashsale/flashsale"
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
