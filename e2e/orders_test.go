//go:build integration

package e2e

import (
	"context"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/internal/orders"
	"github.com/flashsale/flashsale/internal/testenv"
	"github.com/flashsale/flashsale/workflows"
)

// orderService is an in-process client for load, where starting a starter
// process per order would measure process start-up instead of the system.
type orderService struct {
	svc *orders.Service
}

func newOrderService(t *testing.T, s *stack) *orderService {
	t.Helper()
	c, err := client.Dial(client.Options{HostPort: testenv.TemporalAddress(),
		Logger: tlog.NewStructuredLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return &orderService{svc: &orders.Service{Temporal: c, TaskQueue: s.queue}}
}

func (o *orderService) place(orderID, user, sku string) (workflows.Reservation, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	return o.svc.Place(ctx, workflows.OrderInput{OrderID: orderID, UserID: user,
		Items: []flashsale.Item{{SKU: sku, Quantity: 1}}})
}
