//go:build integration

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flashsale/flashsale/internal/testenv"
)

// TestUnavailableExitStatus runs the real binary with one service address
// at a closed port: it prints UNAVAILABLE (not INTERNAL) and exits 3, so a
// script can tell "retry later" from a refusal (exit 1).
func TestUnavailableExitStatus(t *testing.T) {
	bin := filepath.Join(testenv.BuildCommands(t, "", "."), "starter")
	live := []string{
		"PATH=" + os.Getenv("PATH"),
		"REDIS_ADDR=" + testenv.RedisAddr(),
		"MYSQL_DSN=" + testenv.MySQLDSN(t),
		"TEMPORAL_ADDRESS=" + testenv.TemporalAddress(),
	}
	run := func(t *testing.T, env []string, args ...string) (int, errorOut) {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Env = env
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		var exit *exec.ExitError
		require.True(t, errors.As(err, &exit), "%v: %s", err, stderr.String())
		// The last line is the error; go-redis may warn before it.
		lines := bytes.Split(bytes.TrimSpace(stderr.Bytes()), []byte("\n"))
		var got errorOut
		require.NoError(t, json.Unmarshal(lines[len(lines)-1], &got), stderr.String())
		return exit.ExitCode(), got
	}
	closed := func(key, value string) []string {
		env := append([]string(nil), live...)
		for i, kv := range env {
			if len(kv) > len(key) && kv[:len(key)+1] == key+"=" {
				env[i] = key + "=" + value
			}
		}
		return env
	}
	for _, tt := range []struct {
		name string
		env  []string
		args []string
	}{
		{"redis", closed("REDIS_ADDR", "127.0.0.1:1"), []string{"stock", "--sku", "sku-1"}},
		{"mysql", closed("MYSQL_DSN", "root@tcp(127.0.0.1:1)/flashsale"), []string{"stock", "--sku", "sku-1"}},
		{"temporal", closed("TEMPORAL_ADDRESS", "127.0.0.1:1"), []string{"status", "--order", "o-1"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			status, got := run(t, tt.env, tt.args...)
			require.Equal(t, exitUnavailable, status, "%+v", got)
			require.Equal(t, "UNAVAILABLE", string(got.Code), "%+v", got)
			require.Contains(t, got.Error, "127.0.0.1:1", "the operator sees the cause")
		})
	}
	t.Run("other refusals stay 1", func(t *testing.T) {
		status, got := run(t, live, "stock", "--sku", testenv.UniqueID(t))
		require.Equal(t, exitRefused, status, "%+v", got)
		require.Equal(t, "UNKNOWN_SKU", string(got.Code))
	})
}
