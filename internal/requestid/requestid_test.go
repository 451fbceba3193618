package requestid

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
)

type header map[string]*commonpb.Payload

func (h header) Set(k string, p *commonpb.Payload) { h[k] = p }

func (h header) Get(k string) (*commonpb.Payload, bool) {
	p, ok := h[k]
	return p, ok
}

func (h header) ForEachKey(fn func(string, *commonpb.Payload) error) error {
	for k, p := range h {
		if err := fn(k, p); err != nil {
			return err
		}
	}
	return nil
}

func TestPropagatorRoundTrip(t *testing.T) {
	p := Propagator()
	h := header{}
	require.NoError(t, p.Inject(NewContext(context.Background(), "req-1"), h))
	require.Contains(t, h, HeaderKey)
	ctx, err := p.Extract(context.Background(), h)
	require.NoError(t, err)
	require.Equal(t, "req-1", FromContext(ctx))

	// No id, no header: workflows started by the CLI or a schedule.
	empty := header{}
	require.NoError(t, p.Inject(context.Background(), empty))
	require.Empty(t, empty)
	ctx, err = p.Extract(context.Background(), empty)
	require.NoError(t, err)
	require.Empty(t, FromContext(ctx))
}

// A header the API could not have written is ignored, never an error: a
// workflow task must not fail over a log attribute.
func TestExtractIgnoresBadHeaders(t *testing.T) {
	p := Propagator()
	long, err := converter.GetDefaultDataConverter().ToPayload(strings.Repeat("x", MaxLength+1))
	require.NoError(t, err)
	number, err := converter.GetDefaultDataConverter().ToPayload(42)
	require.NoError(t, err)
	for name, payload := range map[string]*commonpb.Payload{"too long": long, "not a string": number, "nil": nil} {
		ctx, err := p.Extract(context.Background(), header{HeaderKey: payload})
		require.NoError(t, err, name)
		require.Empty(t, FromContext(ctx), name)
	}
}
