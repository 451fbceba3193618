//go:build integration

package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flashsale/flashsale/internal/testenv"
)

// maxInitBytes bounds what the starter's package inits allocate before
// main runs. The figure is the go runtime's own count (GODEBUG=inittrace),
// so it measures the work the inits do without timing anything: 3.1 MB
// with the demo and bench commands in (2026-12), against 29 MB when the
// embedded MySQL was linked in (go-icu-regex alone: 21 MB, and a second of
// CPU compiling ICU from WebAssembly).
const maxInitBytes = 8 << 20

// TestStartupInit runs the starter as `go run ./starter` builds it (demo and
// bench included) with GODEBUG=inittrace=1: no package of the embedded
// MySQL runs its init, and all inits together allocate little, so every
// command starts at once and only the demo pays for what the demo needs.
func TestStartupInit(t *testing.T) {
	bin := filepath.Join(testenv.BuildCommands(t, "", "."), "starter")

	cmd := exec.Command(bin, "--help")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), stderr.String())
	require.Contains(t, stdout.String(), "demo", "the binary under test has the demo command")

	type pkgInit struct {
		pkg   string
		bytes int64
	}
	var inits []pkgInit
	var total int64
	// init <package> @<t> ms, <d> ms clock, <bytes> bytes, <allocs> allocs
	for line := range strings.Lines(stderr.String()) {
		f := strings.Fields(line)
		if len(f) < 11 || f[0] != "init" || f[8] != "bytes," {
			continue
		}
		n, err := strconv.ParseInt(f[7], 10, 64)
		require.NoError(t, err, line)
		inits = append(inits, pkgInit{f[1], n})
		total += n
	}
	require.Greater(t, len(inits), 100, "inittrace lines read from: %s", stderr.String())
	for _, in := range inits {
		require.False(t, strings.HasPrefix(in.pkg, "github.com/dolthub/") || strings.HasPrefix(in.pkg, "github.com/tetratelabs/wazero"),
			"starter --help runs the init of %s, which only the embedded MySQL needs", in.pkg)
	}
	slices.SortFunc(inits, func(a, b pkgInit) int { return int(b.bytes - a.bytes) })
	var top []string
	for _, in := range inits[:5] {
		top = append(top, fmt.Sprintf("%s %d", in.pkg, in.bytes))
	}
	require.Less(t, total, int64(maxInitBytes), "package inits allocate %d bytes before main; the largest: %s", total, strings.Join(top, ", "))
}
