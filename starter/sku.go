package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/google/uuid"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/internal/backend"
	"github.com/flashsale/flashsale/internal/catalog"
)

// The SKU commands: the operators' use cases (internal/catalog), the same
// the admin API calls.

func catalogOf(b *backend.Backend) catalog.Catalog {
	return catalog.Catalog{DB: b.Orders, Redis: b.Stock, Temporal: b.Temporal}
}

// orNothing drops the zero result of a use case that failed: on stdout it
// would read as an answer.
func orNothing[T any](v T, err error) (any, error) {
	if err != nil {
		return nil, err
	}
	return v, nil
}

func runSKU(ctx context.Context, args []string) (any, error) {
	if len(args) == 0 {
		return nil, usageError("usage: starter sku create|preheat|close [flags]")
	}
	if isHelp(args[0]) {
		return nil, subcommandHelp("sku", "create", "preheat", "close")
	}
	switch args[0] {
	case "create":
		return runSKUCreate(ctx, args[1:])
	case "preheat":
		return runSKUPreheat(ctx, args[1:])
	case "close":
		return runSKUClose(ctx, args[1:])
	}
	return nil, usageError(fmt.Sprintf("unknown sku command %q: want create, preheat or close", args[0]))
}

// runSKUClose ends the selling of a SKU sold without a queue as a sale's
// close does: no buy from now on; once its last orders settled, MySQL and
// Redis checked, a report (`starter sale show`) and no Redis key left.
func runSKUClose(ctx context.Context, args []string) (any, error) {
	sku, err := idFlag("sku close", "sku", "SKU id (sold without a queue; a fair sale closes with sale close)", args)
	if err != nil {
		return nil, err
	}
	return withBackend(ctx, func(b *backend.Backend) (any, error) {
		return orNothing(salesOf(b).Close(ctx, sku))
	})
}

// runSKUCreate creates or resets a SKU in MySQL and preheats Redis from it
// in the same step, so Redis never keeps selling a previous sale's buckets.
func runSKUCreate(ctx context.Context, args []string) (any, error) {
	fs := flag.NewFlagSet("sku create", flag.ContinueOnError)
	sku := fs.String("sku", "", "SKU id")
	stock := fs.Int64("stock", -1, "units for sale")
	price := fs.Int64("price", -1, "unit price in minor units (cents)")
	buckets := fs.Int("buckets", flashsale.DefaultBuckets, "Redis buckets the stock is split into")
	limit := fs.Int("limit", 1, "units one user may buy")
	queued := fs.Bool("queued", false, "for a fair sale: refuse every buy until `starter sale start` opens its queue")
	window := fs.Duration("payment-window", 0, "how long a buyer has to pay, 1m-72h (0: the worker's PAYMENT_TIMEOUT, 15m);\n"+
		"Redis keeps an order's units for 96h, so a longer window is refused")
	late := fs.String("late-payment", "refund", "money after pay_by: refund, or capture_if_held (captured while the order still holds its units)")
	releaseOnFailed := fs.Bool("release-on-failed-payment", false, "a FAILED payment callback closes the order and puts its units back at once")
	deduct := fs.String("deduct", "hold", "when a buy takes its unit: hold (at the order, until pay_by) or payment (when paid;\n"+
		"a payment that finds none is refunded). High stock and a low price: payment; low stock, a high price: hold")
	overbook := fs.Int("overbook", 0, "with --deduct payment: bookings per unit, 1-10 (0: 3); no more orders start than stock x overbook")
	if err := parse(fs, args); err != nil {
		return nil, err
	}
	if err := required("sku", *sku); err != nil {
		return nil, err
	}
	if *stock < 0 || *price < 0 {
		return nil, usageError("--stock and --price are required and must not be negative")
	}
	def := flashsale.SKU{ID: *sku, Total: *stock, Price: *price, Buckets: *buckets, PerUserLimit: *limit, Queued: *queued,
		Terms: flashsale.Terms{PaymentWindow: flashsale.Duration(*window), LatePayment: flashsale.LatePayment(*late),
			ReleaseOnFailedPayment: *releaseOnFailed, Deduct: flashsale.Deduct(*deduct), Overbook: *overbook}}
	if err := def.Validate(); err != nil {
		return nil, err
	}
	return withBackend(ctx, func(b *backend.Backend) (any, error) {
		return orNothing(catalogOf(b).Define(ctx, def))
	})
}

// preheatResult is the output of sku preheat.
type preheatResult struct {
	SKU            string `json:"sku_id"`
	RedisAvailable int64  `json:"redis_available"`
	DBAvailable    int64  `json:"db_available"`
	Buckets        int    `json:"buckets"`
	Verified       bool   `json:"verified"`
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
		return preheatResult{SKU: d.Inventory.SKU, RedisAvailable: d.Preheat.RedisAvailable, DBAvailable: d.Inventory.Available,
			Buckets: d.Preheat.Buckets, Verified: true}, nil
	})
}

// runStock prints catalog.Stock: Redis beside MySQL, so drift shows at a
// glance.
func runStock(ctx context.Context, args []string) (any, error) {
	sku, err := idFlag("stock", "sku", "SKU id", args)
	if err != nil {
		return nil, err
	}
	return withBackend(ctx, func(b *backend.Backend) (any, error) {
		return orNothing(catalogOf(b).Stock(ctx, sku))
	})
}

// runRestock adds units to a SKU mid-sale (catalog.Restock). The restock id
// makes it safe to repeat: the same id again adds nothing.
func runRestock(ctx context.Context, args []string) (any, error) {
	fs := flag.NewFlagSet("restock", flag.ContinueOnError)
	sku := fs.String("sku", "", "SKU id")
	qty := fs.Int64("qty", 0, "units to add")
	restockID := fs.String("restock-id", "", "idempotency key; repeat it to retry safely (default: a new UUIDv7, printed)")
	if err := parse(fs, args); err != nil {
		return nil, err
	}
	if err := required("sku", *sku); err != nil {
		return nil, err
	}
	if *qty <= 0 {
		return nil, usageError("--qty is required and must be positive")
	}
	if *restockID == "" {
		*restockID = uuid.Must(uuid.NewV7()).String()
	}
	if err := catalog.CheckRestock(*sku, *restockID, *qty); err != nil {
		return nil, err
	}
	return withBackend(ctx, func(b *backend.Backend) (any, error) {
		return orNothing(catalogOf(b).Restock(ctx, *sku, *restockID, *qty))
	})
}

// runBuckets changes a SKU's Redis bucket count mid-sale (catalog.Resize).
func runBuckets(ctx context.Context, args []string) (any, error) {
	fs := flag.NewFlagSet("buckets", flag.ContinueOnError)
	sku := fs.String("sku", "", "SKU id")
	n := fs.Int("buckets", 0, fmt.Sprintf("the new bucket count, 1-%d", flashsale.MaxBuckets))
	if err := parse(fs, args); err != nil {
		return nil, err
	}
	if err := required("sku", *sku); err != nil {
		return nil, err
	}
	if *n == 0 {
		return nil, usageError("--buckets is required")
	}
	if err := flashsale.CheckBuckets(*n); err != nil {
		return nil, err
	}
	return withBackend(ctx, func(b *backend.Backend) (any, error) {
		return orNothing(catalogOf(b).Resize(ctx, *sku, *n))
	})
}
