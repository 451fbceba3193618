package main

import (
	"context"
	"flag"
	"os"
	"time"

	"github.com/flashsale/flashsale/internal/identity"
)

// tokenResult is what `starter token` prints.
type tokenResult struct {
	UserID    string    `json:"user_id"`
	Token     string    `json:"token"`
	ExpiresAt time.Time `json:"expires_at"`
}

// runToken mints a buyer token for --user with the configured
// BUYER_JWT_SECRET (and BUYER_JWT_AUDIENCE / BUYER_JWT_ISSUER), as the
// shop's login service would, so a person can call the buyer endpoints:
//
//	curl -H "Authorization: Bearer $(starter token --user alice | jq -r .token)" ...
func runToken(_ context.Context, args []string) (any, error) {
	fs := flag.NewFlagSet("token", flag.ContinueOnError)
	user := fs.String("user", "", "buyer id (the token's subject)")
	ttl := fs.Duration("ttl", time.Hour, "how long the token is valid")
	if err := parse(fs, args); err != nil {
		return nil, err
	}
	if err := required("user", *user); err != nil {
		return nil, err
	}
	if *ttl <= 0 {
		return nil, usageError("--ttl must be positive")
	}
	cfg, err := identity.LoadConfig(os.Getenv)
	if err != nil {
		return nil, invalid("%v", err)
	}
	m, err := identity.NewMinter(cfg)
	if err != nil {
		return nil, invalid("%v", err)
	}
	now := time.Now()
	m.Now = func() time.Time { return now }
	tok, err := m.Token(*user, *ttl)
	if err != nil {
		return nil, err
	}
	return tokenResult{UserID: *user, Token: tok, ExpiresAt: now.Add(*ttl).UTC().Truncate(time.Second)}, nil
}
