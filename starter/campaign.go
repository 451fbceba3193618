package main

import (
	"context"
	"flag"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/flashsale/flashsale/activities/contract"
	"github.com/flashsale/flashsale/internal/backend"
	"github.com/flashsale/flashsale/internal/catalog"
	"github.com/flashsale/flashsale/workflows"
)

// The campaign commands (docs/sale-day.md, "Campaigns"): the same use case
// (catalog.Campaigns) the admin API calls. Each prints the campaign.

func campaignsOf(b *backend.Backend) catalog.Campaigns {
	return catalog.Campaigns{Temporal: b.Temporal, TaskQueue: b.Config.TaskQueue}
}

var campaignCommands = append([]string{"start", "show"}, catalog.SaleActions...)

func runCampaign(ctx context.Context, args []string) (any, error) {
	if len(args) == 0 {
		return nil, usageError("usage: starter campaign " + strings.Join(campaignCommands, "|") + " [flags]")
	}
	if isHelp(args[0]) {
		return nil, subcommandHelp("campaign", campaignCommands...)
	}
	switch {
	case args[0] == "start":
		return runCampaignStart(ctx, args[1:])
	case args[0] == "show":
		id, err := idFlag("campaign show", "id", "campaign id", args[1:])
		if err != nil {
			return nil, err
		}
		return withBackend(ctx, func(b *backend.Backend) (any, error) { return orNothing(campaignsOf(b).View(ctx, id)) })
	case slices.Contains(catalog.SaleActions, args[0]):
		fs := flag.NewFlagSet("campaign "+args[0], flag.ContinueOnError)
		id := fs.String("id", "", "campaign id")
		reason := fs.String("reason", "", "why, for the audit trail (the workflows' histories)")
		if err := parse(fs, args[1:]); err != nil {
			return nil, err
		}
		if err := required("id", *id); err != nil {
			return nil, err
		}
		return withBackend(ctx, func(b *backend.Backend) (any, error) {
			return orNothing(campaignsOf(b).Control(ctx, *id, args[0], *reason))
		})
	}
	return nil, usageError(fmt.Sprintf("unknown campaign command %q: want %s", args[0], strings.Join(campaignCommands, ", ")))
}

// runCampaignStart starts a campaign of the --item SKUs.
func runCampaignStart(ctx context.Context, args []string) (any, error) {
	fs := flag.NewFlagSet("campaign start", flag.ContinueOnError)
	id := fs.String("id", "", "campaign id, 1-16 characters of A-Z a-z 0-9 _ -")
	opens := fs.String("opens-at", "", "when every item's sale opens: RFC 3339 or a delay from now (90s)")
	closes := fs.String("closes-at", "", "when every item's sale ends: RFC 3339 or a delay from now (1h)")
	ttl := fs.Duration("pass-ttl", 0, "how long a pass may be spent (0: 60s)")
	var items []contract.CampaignItem
	fs.Func("item", "an item, repeated: sku:flash_price:allocation[:per_user_limit] (price in minor units; the allocation "+
		"is carved from the SKU's available stock, what is left goes back at the end; per_user_limit may only be 1: one pass buys one unit)", func(v string) error {
		it, err := parseCampaignItem(v)
		items = append(items, it)
		return err
	})
	if err := parse(fs, args); err != nil {
		return nil, err
	}
	if err := required("id", *id); err != nil {
		return nil, err
	}
	now := time.Now()
	opensAt, err := parseOpensAt(*opens, now)
	if err != nil {
		return nil, err
	}
	if err := required("closes-at", *closes); err != nil {
		return nil, err
	}
	closesAt, err := parseTime("closes-at", *closes, now)
	if err != nil {
		return nil, err
	}
	in := workflows.CampaignInput{ID: *id, OpensAt: opensAt, ClosesAt: closesAt, PassTTL: *ttl, Items: items}
	// The use case checks again; refused here, a wrong campaign needs no
	// connection to be told so.
	if err := workflows.CheckCampaign(in); err != nil {
		return nil, err
	}
	return withBackend(ctx, func(b *backend.Backend) (any, error) { return orNothing(campaignsOf(b).Start(ctx, in)) })
}

// parseCampaignItem reads sku:flash_price:allocation[:per_user_limit].
func parseCampaignItem(v string) (contract.CampaignItem, error) {
	parts := strings.Split(v, ":")
	if len(parts) < 3 || len(parts) > 4 {
		return contract.CampaignItem{}, fmt.Errorf("%q: want sku:flash_price:allocation[:per_user_limit]", v)
	}
	it := contract.CampaignItem{SKU: parts[0], PerUserLimit: 1}
	var err error
	if it.FlashPrice, err = strconv.ParseInt(parts[1], 10, 64); err != nil {
		return it, fmt.Errorf("%q: flash price: %w", v, err)
	}
	if it.Allocation, err = strconv.ParseInt(parts[2], 10, 64); err != nil {
		return it, fmt.Errorf("%q: allocation: %w", v, err)
	}
	if len(parts) == 4 {
		if it.PerUserLimit, err = strconv.Atoi(parts[3]); err != nil {
			return it, fmt.Errorf("%q: per-user limit: %w", v, err)
		}
	}
	return it, nil
}
