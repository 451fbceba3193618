package main

import (
	"context"
	"flag"

	"github.com/google/uuid"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/internal/backend"
	"github.com/flashsale/flashsale/internal/httpapi"
	"github.com/flashsale/flashsale/internal/orders"
	"github.com/flashsale/flashsale/workflows"
)

// The order commands: what a buyer and a payment provider do, through the
// same order client (internal/orders) as the HTTP API.

func orderService(b *backend.Backend) *orders.Service {
	return &orders.Service{Temporal: b.Temporal, TaskQueue: b.Config.TaskQueue, Orders: b.Orders, UserIDKey: b.Config.UserIDKey}
}

// placed is `starter order`'s answer: the reservation (its order_id is the
// order's id, for pay, cancel and status) and, as the API echoes it, the
// buyer's key it was named from.
type placed struct {
	workflows.Reservation
	ClientOrderID string `json:"client_order_id,omitempty"`
}

func runOrder(ctx context.Context, args []string) (any, error) {
	fs := flag.NewFlagSet("order", flag.ContinueOnError)
	user := fs.String("user", "", "buyer's user id")
	sku := fs.String("sku", "", "SKU id")
	qty := fs.Int64("qty", 1, "units")
	key := fs.String("client-order-id", "", "the buyer's idempotency key, as the API's client_order_id: the same key again reaches the same order (default: none, a new order)")
	orderID := fs.String("order-id", "", "the order's own id (the order_id pay, cancel and status name), for an order known by its id; not with --client-order-id")
	if err := parse(fs, args); err != nil {
		return nil, err
	}
	if err := required("user", *user); err != nil {
		return nil, err
	}
	if err := required("sku", *sku); err != nil {
		return nil, err
	}
	o := flashsale.Order{OrderID: *orderID, UserID: *user, Items: []flashsale.Item{{SKU: *sku, Quantity: *qty}}}
	switch {
	case *key != "" && *orderID != "":
		return nil, usageError("--client-order-id names the order from the buyer's key, --order-id names it outright: give one")
	case *key != "":
		if err := flashsale.CheckClientOrderID(*key); err != nil {
			return nil, err
		}
		// The order a buy with this key through the API names, so a
		// retry through either door reaches the same order.
		o.OrderID = flashsale.BuyerOrderID(*user, *key)
	case *orderID == "":
		// As the API names an order bought without a key.
		o.OrderID = uuid.Must(uuid.NewV7()).String()
	}
	// The one validation of an order, before any connection: a bad order
	// fails fast and the same way as through the API.
	if err := o.Validate(); err != nil {
		return nil, err
	}
	return withBackend(ctx, func(b *backend.Backend) (any, error) {
		res, err := orderService(b).PlaceOrder(ctx, o)
		if err != nil {
			// No reservation to show: a zero one on stdout would read as
			// an answer.
			return nil, err
		}
		return placed{Reservation: res, ClientOrderID: *key}, nil
	})
}

func runPay(ctx context.Context, args []string) (any, error) {
	fs := flag.NewFlagSet("pay", flag.ContinueOnError)
	orderID := fs.String("order", "", "order id")
	txn := fs.String("txn", "", "payment provider's transaction id")
	amount := fs.Int64("amount", 0, "amount paid in minor units")
	viaAPI := fs.String("via-api", "", "base URL of the HTTP API (e.g. http://localhost:8080): send the payment as the provider's signed webhook instead of calling Temporal")
	status := fs.String("status", "SUCCESS", "with --via-api: the provider's verdict, SUCCESS or FAILED")
	if err := parse(fs, args); err != nil {
		return nil, err
	}
	if err := required("order", *orderID); err != nil {
		return nil, err
	}
	if err := required("txn", *txn); err != nil {
		return nil, err
	}
	if *amount <= 0 {
		return nil, usageError("--amount must be positive")
	}
	if *viaAPI != "" {
		return payViaAPI(ctx, *viaAPI, httpapi.Callback{OrderID: *orderID, TransactionID: *txn, Amount: *amount, Status: *status})
	}
	return withBackend(ctx, func(b *backend.Backend) (any, error) {
		return orderService(b).Pay(ctx, *orderID, workflows.Payment{TransactionID: *txn, Amount: *amount})
	})
}

func runCancel(ctx context.Context, args []string) (any, error) {
	orderID, err := idFlag("cancel", "order", "order id", args)
	if err != nil {
		return nil, err
	}
	return withBackend(ctx, func(b *backend.Backend) (any, error) {
		return orderService(b).Cancel(ctx, orderID)
	})
}

func runStatus(ctx context.Context, args []string) (any, error) {
	orderID, err := idFlag("status", "order", "order id", args)
	if err != nil {
		return nil, err
	}
	return withBackend(ctx, func(b *backend.Backend) (any, error) {
		return orderService(b).Status(ctx, orderID)
	})
}

// buyerOrders is `starter orders`' answer: the hash the buyer's orders are
// kept under in Temporal's visibility, and the orders found by it.
type buyerOrders struct {
	UserIDDigest string              `json:"user_id_digest"`
	Query        string              `json:"query"`
	Orders       []orders.BuyerOrder `json:"orders"`
}

// runOrders finds a buyer's orders by the keyed hash of their id
// (USER_ID_HMAC_KEY), the only form of it Temporal's visibility holds.
func runOrders(ctx context.Context, args []string) (any, error) {
	fs := flag.NewFlagSet("orders", flag.ContinueOnError)
	user := fs.String("user", "", "the buyer's user id")
	limit := fs.Int("limit", 100, "most orders listed, newest first")
	if err := parse(fs, args); err != nil {
		return nil, err
	}
	if err := required("user", *user); err != nil {
		return nil, err
	}
	return withBackend(ctx, func(b *backend.Backend) (any, error) {
		digest, found, err := orderService(b).BuyerOrders(ctx, *user, max(*limit, 1))
		if err != nil {
			return nil, err
		}
		return buyerOrders{UserIDDigest: digest, Query: workflows.BuyerOrdersQuery(digest), Orders: append([]orders.BuyerOrder{}, found...)}, nil
	})
}
