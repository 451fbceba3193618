//go:build integration

package bench

import (
	"context"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/worker"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/internal/app"
	"github.com/flashsale/flashsale/internal/app/apptest"
	"github.com/flashsale/flashsale/internal/backend"
	"github.com/flashsale/flashsale/internal/orders"
	"github.com/flashsale/flashsale/internal/testenv"
	"github.com/flashsale/flashsale/lab/ceiling"
)

// The order at its minimum (issue 26), read from the real server as the
// bench reads it: an order placed as the API places it runs OrderWorkflow;
// a paid one costs at most 17 events, 4 state transitions and one
// search-attribute upsert (PAID; with the start's, two visibility writes),
// an expired or cancelled one at most 6 transitions, and no path writes
// more than its final status. OrderWorkflow's figures (20 events and three
// upserts paid) are pinned by workflows/testdata/settle-*.json.
func TestOrderPathsCostTheMinimum(t *testing.T) {
	ctx := context.Background()
	sys := apptest.Start(t, apptest.Options{Name: "paths",
		Logger:   slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})),
		Register: func(r worker.Registry, b *backend.Backend) { ceiling.Register(r, app.Activities(b)) }})
	sku, soldOut := "paths-"+testenv.UniqueID(t), "paths-none-"+testenv.UniqueID(t)
	for sku, units := range map[string]int64{sku: 20, soldOut: 0} {
		_, err := sys.Orders.PutSKU(ctx, flashsale.SKU{ID: sku, Total: units, Price: 250, Buckets: 4, PerUserLimit: 1})
		require.NoError(t, err)
		_, err = sys.Stock.Preheat(ctx, sku, units, 4)
		require.NoError(t, err)
	}
	svc := &orders.Service{Temporal: sys.Temporal, TaskQueue: sys.Config.TaskQueue, Orders: sys.Orders}

	paths, err := OrderPaths(ctx, svc, PathsOptions{Server: "dev", SKU: sku, SoldOutSKU: soldOut, Amount: 250,
		Run: testenv.UniqueID(t), PerPath: 2, ExpireAfter: 2 * time.Second, Queue: sys.Config.TaskQueue})
	require.NoError(t, err)
	got := map[string]PathCost{}
	for _, p := range paths {
		got[p.Path] = p
	}
	for _, path := range []string{PathPaid, PathExpired, PathCancelled, PathRejected} {
		require.Equal(t, "OrderWorkflow", got[path].WorkflowType, path)
		require.Equal(t, []int64{1, 1}, []int64{got[path].UpsertsMin, got[path].UpsertsMax}, "%s: only the final status is upserted", path)
	}
	paid := got[PathPaid]
	require.Equal(t, "PAID", paid.Status)
	require.LessOrEqual(t, paid.EventsMax, int64(17))
	require.LessOrEqual(t, paid.TransitionsMax, int64(4))
	for _, path := range []string{PathExpired, PathCancelled} {
		require.LessOrEqual(t, got[path].TransitionsMax, int64(6), path)
	}
	require.Zero(t, got[PathCeiling].UpsertsMax)
	t.Logf("paid %d events %d transitions; expired %d/%d; cancelled %d/%d; rejected %d/%d",
		paid.Events, paid.Transitions, got[PathExpired].Events, got[PathExpired].Transitions,
		got[PathCancelled].Events, got[PathCancelled].Transitions, got[PathRejected].Events, got[PathRejected].Transitions)
}
