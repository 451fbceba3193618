package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/flashsale/flashsale/internal/backend"
	"github.com/flashsale/flashsale/internal/config"
	"github.com/flashsale/flashsale/internal/orderdb"
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
