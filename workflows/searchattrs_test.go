//go:build integration

package workflows_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/flashsale/flashsale/internal/testenv"
	"github.com/flashsale/flashsale/workflows"
)

// newNamespace registers a namespace of its own on the test server, so the
// search attributes start missing.
func newNamespace(t *testing.T) (client.Client, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ns := "sa-" + testenv.UniqueID(t)
	c, err := client.DialContext(ctx, client.Options{HostPort: testenv.TemporalAddress(), Namespace: ns})
	require.NoError(t, err, "a Temporal server is required (scripts/services.sh starts one)")
	t.Cleanup(c.Close)
	_, err = c.WorkflowService().RegisterNamespace(ctx, &workflowservice.RegisterNamespaceRequest{
		Namespace: ns, WorkflowExecutionRetentionPeriod: durationpb.New(24 * time.Hour),
	})
	require.NoError(t, err)
	return c, ns
}

func list(t *testing.T, c client.Client, ns string) map[string]enums.IndexedValueType {
	resp, err := c.OperatorService().ListSearchAttributes(context.Background(), &operatorservice.ListSearchAttributesRequest{Namespace: ns})
	require.NoError(t, err)
	return resp.GetCustomAttributes()
}

func TestEnsureSearchAttributesCreatesWhatIsMissing(t *testing.T) {
	c, ns := newNamespace(t)
	ctx := context.Background()
	// A fresh namespace becomes known to every service within seconds.
	require.EventuallyWithT(t, func(col *assert.CollectT) {
		assert.NoError(col, workflows.EnsureSearchAttributes(ctx, c, ns))
	}, 30*time.Second, 500*time.Millisecond)
	got := list(t, c, ns)
	require.Equal(t, enums.INDEXED_VALUE_TYPE_KEYWORD, got["OrderStatus"])
	require.Equal(t, enums.INDEXED_VALUE_TYPE_KEYWORD, got["UserId"])
	require.Equal(t, enums.INDEXED_VALUE_TYPE_KEYWORD_LIST, got["SkuIds"])
	// A second worker starting finds them and changes nothing.
	require.NoError(t, workflows.EnsureSearchAttributes(ctx, c, ns))
}

func TestEnsureSearchAttributesRefusesAWrongType(t *testing.T) {
	c, ns := newNamespace(t)
	ctx := context.Background()
	require.EventuallyWithT(t, func(col *assert.CollectT) {
		_, err := c.OperatorService().AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{
			Namespace: ns, SearchAttributes: map[string]enums.IndexedValueType{"SkuIds": enums.INDEXED_VALUE_TYPE_TEXT},
		})
		assert.NoError(col, err)
	}, 30*time.Second, 500*time.Millisecond)
	err := workflows.EnsureSearchAttributes(ctx, c, ns)
	require.ErrorIs(t, err, workflows.ErrSearchAttributes)
	require.ErrorContains(t, err, "SkuIds")
}
