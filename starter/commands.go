package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/google/uuid"

	"github.com/flashsale/flashsale/internal/backend"
	"github.com/flashsale/flashsale/internal/catalog"
	"github.com/flashsale/flashsale/internal/config"
	"github.com/flashsale/flashsale/internal/orderdb"
	"github.com/flashsale/flashsale/internal/orders"
	"github.com/flashsale/flashsale/workflows"
)

// parse parses flags, turning flag errors into usage errors.
func parse(fs *flag.FlagSet, args []string) error {
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		return flagHelp(fs)
	}
	if err != nil {
		return usageError(fmt.Sprintf("%s: %v", fs.Name(), err))
	}
	if fs.NArg() > 0 {
		return usageError(fmt.Sprintf("%s: unexpected arguments %v", fs.Name(), fs.Args()))
	}
	return nil
}

func required(name, value string) error {
	if value == "" {
		return usageError(fmt.Sprintf("--%s is required", name))
	}
	return nil
}

// connect opens every backend connection with the environment's settings.
func connect(ctx context.Context) (*backend.Backend, error) {
	cfg, err := config.Load()
	if err != nil {
		return nil, invalid("%v", err)
	}
	return backend.Connect(ctx, cfg, slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
}

func orderService(b *backend.Backend) *orders.Service {
	return &orders.Service{Temporal: b.Temporal, TaskQueue: b.Config.TaskQueue, Orders: b.Orders}
}

func runMigrate(ctx context.Context, args []string) (any, error) {
	fs := flag.NewFlagSet("migrate", flag.ContinueOnError)
	if err := parse(fs, args); err != nil {
		return nil, err
	}
	cfg, err := config.Load()
	if err != nil {
		return nil, invalid("%v", err)
	}
	// Open applies the migrations.
	s, err := orderdb.Open(ctx, cfg.MySQLDSN)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	return map[string]string{"status": "migrated"}, nil
}

func runSKU(ctx context.Context, args []string) (any, error) {
	if len(args) == 0 {
		return nil, usageError("usage: starter sku create|preheat [flags]")
	}
	if isHelp(args[0]) {
		return nil, subcommandHelp("sku", "create", "preheat")
	}
	switch args[0] {
	case "create":
		return runSKUCreate(ctx, args[1:])
	case "preheat":
		return runSKUPreheat(ctx, args[1:])
	}
	return nil, usageError(fmt.Sprintf("unknown sku command %q: want create or preheat", args[0]))
}

// runSKUCreate creates or resets a SKU in MySQL and preheats Redis from it
// in the same step, so Redis never keeps selling a previous sale's buckets.
func runSKUCreate(ctx context.Context, args []string) (any, error) {
	fs := flag.NewFlagSet("sku create", flag.ContinueOnError)
	sku := fs.String("sku", "", "SKU id")
	stock := fs.Int64("stock", -1, "units for sale")
	price := fs.Int64("price", -1, "unit price in minor units (cents)")
	buckets := fs.Int("buckets", 16, "Redis buckets the stock is split into")
	limit := fs.Int("limit", 1, "units one user may buy")
	if err := parse(fs, args); err != nil {
		return nil, err
	}
	if err := required("sku", *sku); err != nil {
		return nil, err
	}
	if *stock < 0 || *price < 0 {
		return nil, usageError("--stock and --price are required and must not be negative")
	}
	return withBackend(ctx, func(b *backend.Backend) (any, error) {
		return catalogOf(b).Define(ctx, orderdb.SKU{ID: *sku, Total: *stock, Price: *price, Buckets: *buckets, PerUserLimit: *limit})
	})
}

func catalogOf(b *backend.Backend) catalog.Catalog {
	return catalog.Catalog{Orders: b.Orders, Stock: b.Stock, Temporal: b.Temporal}
}

// preheatResult is the output of sku preheat.
type preheatResult struct {
	SKU         string `json:"sku_id"`
	RedisTotal  int64  `json:"redis_total"`
	DBAvailable int64  `json:"db_available"`
	Buckets     int    `json:"buckets"`
	Verified    bool   `json:"verified"`
}

func runSKUPreheat(ctx context.Context, args []string) (any, error) {
	sku, err := idFlag("sku preheat", "sku", "SKU id", args)
	if err != nil {
		return nil, err
	}
	return withBackend(ctx, func(b *backend.Backend) (any, error) {
		d, err := catalogOf(b).Preheat(ctx, sku)
		if err != nil {
			return nil, err
		}
		return preheatResult{SKU: d.Inventory.SKU, RedisTotal: d.Preheat.RedisTotal, DBAvailable: d.Inventory.Available,
			Buckets: d.Preheat.Buckets, Verified: true}, nil
	})
}

// stockResult is the output of stock: Redis (available, sold_out) beside
// MySQL (the rest), so drift shows at a glance.
type stockResult struct {
	SKU         string `json:"sku_id"`
	Total       int64  `json:"total"`
	Available   int64  `json:"available"`
	DBAvailable int64  `json:"db_available"`
	Frozen      int64  `json:"frozen"`
	Sold        int64  `json:"sold"`
	SoldOut     bool   `json:"sold_out"`
	BucketCount int    `json:"bucket_count"`
	Drift       int64  `json:"drift"`
}

func runStock(ctx context.Context, args []string) (any, error) {
	sku, err := idFlag("stock", "sku", "SKU id", args)
	if err != nil {
		return nil, err
	}
	return withBackend(ctx, func(b *backend.Backend) (any, error) {
		inv, err := b.Orders.Inventory(ctx, sku)
		if err != nil {
			return nil, err
		}
		st, err := b.Stock.Stock(ctx, sku)
		if err != nil {
			return nil, err
		}
		return stockResult{
			SKU: inv.SKU, Total: inv.Total, Available: st.Available, DBAvailable: inv.Available,
			Frozen: inv.Frozen, Sold: inv.Sold, SoldOut: st.SoldOut, BucketCount: st.Buckets, Drift: st.Drift,
		}, nil
	})
}

func runOrder(ctx context.Context, args []string) (any, error) {
	fs := flag.NewFlagSet("order", flag.ContinueOnError)
	user := fs.String("user", "", "buyer's user id")
	sku := fs.String("sku", "", "SKU id")
	qty := fs.Int64("qty", 1, "units")
	orderID := fs.String("order-id", "", "order id; repeat it to retry safely (default: a new UUIDv7)")
	if err := parse(fs, args); err != nil {
		return nil, err
	}
	if err := required("user", *user); err != nil {
		return nil, err
	}
	if err := required("sku", *sku); err != nil {
		return nil, err
	}
	if *orderID == "" {
		*orderID = uuid.Must(uuid.NewV7()).String()
	}
	in := workflows.OrderInput{OrderID: *orderID, UserID: *user, Items: []workflows.Item{{SKU: *sku, Quantity: *qty}}}
	if err := workflows.ValidateInput(in); err != nil {
		return nil, invalid("%v", err)
	}
	return withBackend(ctx, func(b *backend.Backend) (any, error) {
		res, err := orderService(b).Place(ctx, in)
		if err != nil {
			// No reservation to show: a zero one on stdout would read as
			// an answer.
			return nil, err
		}
		return res, nil
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
		return payViaAPI(ctx, *viaAPI, callback{OrderID: *orderID, TransactionID: *txn, Amount: *amount, Status: *status})
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

// idFlag parses a command whose only flag is one required id.
func idFlag(command, flagName, usage string, args []string) (string, error) {
	fs := flag.NewFlagSet(command, flag.ContinueOnError)
	id := fs.String(flagName, "", usage)
	if err := parse(fs, args); err != nil {
		return "", err
	}
	return *id, required(flagName, *id)
}

// withBackend connects to every service, runs fn and closes the
// connections.
func withBackend(ctx context.Context, fn func(*backend.Backend) (any, error)) (any, error) {
	b, err := connect(ctx)
	if err != nil {
		return nil, err
	}
	defer b.Close()
	return fn(b)
}
