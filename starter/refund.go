package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/flashsale/flashsale/internal/backend"
	"github.com/flashsale/flashsale/internal/orders"
)

// The refund commands: an operator's refund of one paid order, and money
// owed back marked sent (internal/orders.Refunds, as the admin API).

func runRefund(ctx context.Context, args []string) (any, error) {
	if len(args) == 0 {
		return nil, usageError("usage: starter refund order|mark [flags]")
	}
	if isHelp(args[0]) {
		return nil, subcommandHelp("refund", "order", "mark")
	}
	switch args[0] {
	case "order":
		return runRefundOrder(ctx, args[1:])
	case "mark":
		return runRefundMark(ctx, args[1:])
	}
	return nil, usageError(fmt.Sprintf("unknown refund command %q: want order or mark", args[0]))
}

func runRefundOrder(ctx context.Context, args []string) (any, error) {
	fs := flag.NewFlagSet("refund order", flag.ContinueOnError)
	order := fs.String("order", "", "the paid order's id")
	restock := fs.String("restock", "", "true: the units go back to available (on sale while the sale runs); false: written off")
	reason := fs.String("reason", "", "why, kept with the order")
	if err := parse(fs, args); err != nil {
		return nil, err
	}
	if err := required("order", *order); err != nil {
		return nil, err
	}
	if *restock != "true" && *restock != "false" {
		return nil, usageError("--restock=true or --restock=false is required")
	}
	return withBackend(ctx, func(b *backend.Backend) (any, error) {
		return orNothing(orders.Refunds{Orders: b.Orders, Stock: b.Stock}.Refund(ctx, *order, *reason, *restock == "true"))
	})
}

func runRefundMark(ctx context.Context, args []string) (any, error) {
	fs := flag.NewFlagSet("refund mark", flag.ContinueOnError)
	txn := fs.String("txn", "", "the transaction id of the payment owed back (REFUND_REQUIRED)")
	ref := fs.String("refund-id", "", "the provider's id of the refund")
	if err := parse(fs, args); err != nil {
		return nil, err
	}
	if err := required("txn", *txn); err != nil {
		return nil, err
	}
	return withBackend(ctx, func(b *backend.Backend) (any, error) {
		return orNothing(orders.Refunds{Orders: b.Orders, Stock: b.Stock}.MarkRefunded(ctx, *txn, *ref))
	})
}
