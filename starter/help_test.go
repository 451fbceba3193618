//go:build integration

package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flashsale/flashsale/internal/metrics"
	"github.com/flashsale/flashsale/internal/testenv"
)

// TestHelp runs the real binaries with --help against an environment whose
// every service address is unreachable: help must print usage naming every
// flag and environment variable on stdout and exit 0 without connecting to
// anything (a connection attempt would fail and exit non-zero).
func TestHelp(t *testing.T) {
	bin := testenv.BuildCommands(t, "", ".", "../worker", "../api")
	env := []string{
		"PATH=" + os.Getenv("PATH"),
		"TEMPORAL_ADDRESS=127.0.0.1:1", "REDIS_ADDR=127.0.0.1:1",
		"MYSQL_DSN=root@tcp(127.0.0.1:1)/nothing", "METRICS_ADDR=127.0.0.1:1",
	}
	run := func(t *testing.T, name string, args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, filepath.Join(bin, name), args...)
		cmd.Env = env
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		// Every service address refuses connections: a command that tried
		// one would fail, and say so on stderr.
		require.NoError(t, cmd.Run(), "%s %v: stderr %s", name, args, stderr.String())
		require.Empty(t, stderr.String(), "%s %v", name, args)
		return stdout.String()
	}

	serviceEnv := envNames(t, "../internal/config/config.go")
	require.Contains(t, serviceEnv, "TEMPORAL_ADDRESS")
	apiEnv := append(envNames(t, "../internal/httpapi/config.go"), envNames(t, "../internal/identity/identity.go")...)
	require.Contains(t, apiEnv, "BUYER_JWT_SECRET")

	t.Run("api", func(t *testing.T) {
		for _, arg := range []string{"-help", "--help", "-h"} {
			out := run(t, "api", arg)
			require.True(t, strings.HasPrefix(out, "usage: api"), out)
			for _, name := range append(append([]string{"-healthcheck", metrics.AddrEnv}, serviceEnv...), apiEnv...) {
				require.Contains(t, out, name, "api %s", arg)
			}
		}
	})
	t.Run("worker", func(t *testing.T) {
		for _, arg := range []string{"-help", "--help", "-h"} {
			out := run(t, "worker", arg)
			require.True(t, strings.HasPrefix(out, "usage: worker"), out)
			for _, name := range append([]string{metrics.AddrEnv}, serviceEnv...) {
				require.Contains(t, out, name, "worker %s", arg)
			}
		}
	})
	t.Run("starter", func(t *testing.T) {
		for _, arg := range []string{"--help", "-h", "help"} {
			out := run(t, "starter", arg)
			require.True(t, strings.HasPrefix(out, "usage: starter"), out)
			for _, c := range commands() {
				require.Contains(t, out, "\n  "+c.name+" ", "starter %s lists %s", arg, c.name)
			}
			for _, name := range serviceEnv {
				require.Contains(t, out, name)
			}
		}
	})
	t.Run("starter CMD", func(t *testing.T) {
		// Each command with the flags it must list.
		cmds := map[string][]string{
			"migrate":            nil,
			"sku create":         {"-sku", "-stock", "-price", "-buckets", "-limit"},
			"sku preheat":        {"-sku"},
			"stock":              {"-sku"},
			"restock":            {"-sku", "-qty", "-restock-id"},
			"buckets":            {"-sku", "-buckets"},
			"order":              {"-user", "-sku", "-qty", "-client-order-id", "-order-id"},
			"pay":                {"-order", "-txn", "-amount", "-via-api", "-status"},
			"cancel":             {"-order"},
			"status":             {"-order"},
			"orders":             {"-user", "-limit"},
			"token":              {"-user", "-ttl"},
			"demo":               {"-units", "-buyers", "-concurrency", "-payment-timeout", "-pay", "-cancel", "-keep", "-json", "-campaign"},
			"preflight":          {"-sku", "-expected-peak"},
			"sku close":          {"-sku"},
			"sale closes-at":     {"-sku", "-at", "-reason"},
			"campaign start":     {"-id", "-opens-at", "-closes-at", "-pass-ttl", "-item"},
			"campaign show":      {"-id"},
			"campaign open":      {"-id", "-reason"},
			"campaign pause":     {"-id", "-reason"},
			"campaign resume":    {"-id", "-reason"},
			"campaign close":     {"-id", "-reason"},
			"campaign void":      {"-id", "-reason"},
			"check":              {"-sku", "-grace"},
			"reconcile schedule": {"-every", "-settle", "-now", "-max-correct", "-max-correct-percent"},
			"reconcile now":      {"-sku", "-dry-run", "-max-correct", "-max-correct-percent"},
			"reconcile holds":    {"-status"},
			"reconcile approve":  {"-id", "-by", "-settle"},
			"reconcile reject":   {"-id", "-by"},
			"sale start":         {"-sku", "-opens-at", "-pass-ttl", "-max-entrants", "-closes-at", "-expected-peak"},
			"sale show":          {"-sku"},
			"sale open":          {"-sku", "-reason"},
			"sale pause":         {"-sku", "-reason"},
			"sale resume":        {"-sku", "-reason"},
			"sale close":         {"-sku", "-reason"},
			"sale void":          {"-sku", "-reason"},
			"refund order":       {"-order", "-restock", "-reason"},
			"refund mark":        {"-txn", "-refund-id"},
		}
		for _, c := range commands() {
			if c.name != "sku" && c.name != "reconcile" && c.name != "sale" && c.name != "refund" && c.name != "campaign" {
				require.Contains(t, cmds, c.name, "a new command needs a line here")
			}
		}
		for cmd, flags := range cmds {
			args := append(strings.Fields(cmd), "--help")
			out := run(t, "starter", args...)
			require.True(t, strings.HasPrefix(out, "usage: starter "+cmd+" "), "starter %s: %s", cmd, out)
			for _, f := range flags {
				require.Regexp(t, `(?m)^  `+regexp.QuoteMeta(f)+`( |$)`, out, "starter %s --help lists %s", cmd, f)
			}
			require.Contains(t, out, "TEMPORAL_ADDRESS")
		}
		for _, group := range []string{"sku", "reconcile", "sale", "refund", "campaign"} {
			out := run(t, "starter", group, "--help")
			require.True(t, strings.HasPrefix(out, "usage: starter "+group+" "), out)
		}
	})
}

// envNames lists the environment variables a config file reads.
func envNames(t *testing.T, path string) []string {
	t.Helper()
	src, err := os.ReadFile(path)
	require.NoError(t, err)
	var names []string
	for _, m := range regexp.MustCompile(`(?:getenv|Getenv|str)\("([A-Z][A-Z0-9_]+)"`).FindAllStringSubmatch(string(src), -1) {
		names = append(names, m[1])
	}
	return names
}
