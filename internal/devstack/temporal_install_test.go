// The stub go command below is a shell script, so this test is built where
// shells run scripts rather than skipped on Windows.

//go:build !windows

package devstack

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flashsale/flashsale/internal/testenv"
)

// The first run installs the CLI with go install; the person waiting sees
// the go command's downloads, ticking elapsed-time lines and the result.
// A stub go command stands in for the three-minute build.
func TestInstallTemporalProgress(t *testing.T) {
	dir := t.TempDir()
	gobin := filepath.Join(dir, "bin")
	require.NoError(t, os.Mkdir(gobin, 0o755))
	stub := `#!/bin/sh
PATH=/usr/bin:/bin
case "$1" in
env) echo "$STUB_GOBIN"; echo "/nowhere" ;;
install)
	[ "$GOFLAGS" = "" ] || { echo "GOFLAGS leaked: $GOFLAGS" >&2; exit 2; }
	[ "$3" = "github.com/temporalio/cli/cmd/temporal@v1.5.1" ] || { echo "unexpected target $3" >&2; exit 2; }
	[ -n "$STUB_FAIL" ] && { echo "go: github.com/temporalio/cli@v1.5.1: no route to proxy" >&2; exit 1; }
	echo "go: downloading github.com/temporalio/cli v1.5.1" >&2
	echo "github.com/temporalio/cli/temporalcli/devserver" >&2
	sleep 0.5
	echo "github.com/temporalio/cli/cmd/temporal" >&2
	printf '#!/bin/sh\nexit 0\n' > "$STUB_GOBIN/temporal"
	chmod +x "$STUB_GOBIN/temporal"
	;;
esac
`
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go"), []byte(stub), 0o755))
	t.Setenv("PATH", dir)
	t.Setenv("STUB_GOBIN", gobin)
	t.Setenv("GOFLAGS", "-mod=vendor")
	defer func(d time.Duration) { buildTick = d }(buildTick)
	buildTick = 100 * time.Millisecond

	t.Setenv("STUB_FAIL", "1")
	out := &testenv.Buffer{}
	_, err := temporalBinary(context.Background(), "go", out)
	require.ErrorContains(t, err, "no route to proxy", "the go command's last words are in the error")

	t.Setenv("STUB_FAIL", "")
	out = &testenv.Buffer{}
	bin, err := temporalBinary(context.Background(), "go", out)
	require.NoError(t, err)
	require.Equal(t, filepath.Join(gobin, "temporal"), bin)
	got := out.String()
	t.Logf("progress:\n%s", got)
	require.Contains(t, got, "building github.com/temporalio/cli/cmd/temporal@v1.5.1")
	require.Contains(t, got, "temporal:   go: downloading github.com/temporalio/cli v1.5.1")
	require.Regexp(t, `temporal: building\.\.\. \d+s elapsed, [12] packages compiled`, got)
	require.Contains(t, got, "temporal: built the Temporal CLI in")
	require.NotContains(t, got, "temporalcli/devserver", "package names are counted, not listed")

	// Installed once, found from then on without building.
	out = &testenv.Buffer{}
	again, err := temporalBinary(context.Background(), "go", out)
	require.NoError(t, err)
	require.Equal(t, bin, again)
	require.Empty(t, out.String())
}
