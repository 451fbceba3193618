package app

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/flashsale/flashsale/internal/buildinfo"
	"github.com/flashsale/flashsale/internal/config"
)

// Main is the rest of command name's main once its flags are parsed, the
// same for the worker and the API: -version prints the build and exits;
// -healthcheck asks check whether the running process is ready (exit 0, or
// 1 saying why); otherwise the logger is built from the environment (a bad
// LOG_LEVEL exits 2) and the process open opens runs until SIGINT or
// SIGTERM (Run); one that fails to start or stops with an error exits 1.
func Main(name string, version, healthcheck bool, check func() error,
	open func(ctx context.Context, cfg config.Config, logger *slog.Logger) (Process, error)) {
	if version {
		if err := buildinfo.Read().Print(os.Stdout, name); err != nil {
			os.Exit(1)
		}
		return
	}
	if healthcheck {
		if err := check(); err != nil {
			fmt.Fprintln(os.Stderr, "unhealthy:", err)
			os.Exit(1)
		}
		return
	}
	logger, err := NewLogger(os.Getenv, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, name+":", err)
		os.Exit(2)
	}
	err = Run(func(ctx context.Context, cfg config.Config) (Process, error) { return open(ctx, cfg, logger) })
	if err != nil {
		logger.Error(name+" stopped", "error", err)
		os.Exit(1)
	}
}
