package devstack

import (
	"context"
	"net"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/flashsale/flashsale/internal/testenv"
)

// The flags are written twice, here and in scripts/temporal-dev.sh (for
// people running services by hand); every setting the script passes must
// be passed here too.
func TestTemporalArgsMatchScript(t *testing.T) {
	script, err := os.ReadFile("../../scripts/temporal-dev.sh")
	require.NoError(t, err)
	// Values with '=' (or the log level) skip the script's comments.
	flag := regexp.MustCompile(`(--(?:search-attribute|dynamic-config-value|sqlite-pragma))\s+([^\s)]+=[^\s)]+)|(--log-level)\s+(\w+)`)
	want := flag.FindAllStringSubmatch(string(script), -1)
	require.GreaterOrEqual(t, len(want), 7, "the script's flags were found")

	args := temporalArgs(7233, 8233, "", DefaultDynamicConfig())
	pairs := map[string]bool{}
	for i := 0; i+1 < len(args); i++ {
		pairs[args[i]+" "+args[i+1]] = true
	}
	inScript := map[string]bool{}
	for _, m := range want {
		f, v := m[1]+m[3], m[2]+m[4]
		inScript[f+" "+v] = true
		require.True(t, pairs[f+" "+v], "missing %s %s", f, v)
	}
	// And the other way: the adopted settings reach people who start the
	// server with the script.
	for _, kv := range DefaultDynamicConfig() {
		require.True(t, inScript["--dynamic-config-value "+kv], "scripts/temporal-dev.sh lacks %s", kv)
	}
	require.Equal(t, []string{"server", "start-dev", "--ip", "127.0.0.1", "--port", "7233", "--ui-port", "8233"}, args[:8])
	require.NotContains(t, args, "--db-filename", "in memory unless a file is asked for")
	withFile := temporalArgs(1, 2, "/tmp/x.db", nil)
	require.Equal(t, []string{"--db-filename", "/tmp/x.db"}, withFile[len(withFile)-2:])
	require.NotContains(t, withFile, "--dynamic-config-value", "nothing but what was asked for")
}

// A dev server on free ports serves the default namespace with the order
// workflow's search attributes and the Web UI, and Stop frees its ports.
func TestStartTemporal(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var progress testenv.Buffer
	tp, err := StartTemporal(ctx, TemporalOptions{Progress: &progress})
	require.NoError(t, err)
	t.Cleanup(func() { _ = tp.Stop() })
	t.Logf("progress:\n%s", progress.String())
	require.Contains(t, progress.String(), "temporal: ready in")
	require.Regexp(t, `^127\.0\.0\.1:\d+$`, tp.Address())
	require.Regexp(t, `^http://127\.0\.0\.1:\d+$`, tp.UIURL())

	c, err := client.DialContext(ctx, client.Options{HostPort: tp.Address(), Namespace: TemporalNamespace})
	require.NoError(t, err)
	defer c.Close()
	sa, err := c.OperatorService().ListSearchAttributes(ctx,
		&operatorservice.ListSearchAttributesRequest{Namespace: TemporalNamespace})
	require.NoError(t, err)
	want := map[string]enumspb.IndexedValueType{
		"OrderStatus": enumspb.INDEXED_VALUE_TYPE_KEYWORD,
		"UserId":      enumspb.INDEXED_VALUE_TYPE_KEYWORD,
		"SkuIds":      enumspb.INDEXED_VALUE_TYPE_KEYWORD_LIST,
	}
	for name, typ := range want {
		require.Equal(t, typ, sa.GetCustomAttributes()[name], "search attribute %s", name)
	}

	resp, err := http.Get(tp.UIURL())
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)

	pid := tp.cmd.Process.Pid
	require.NoError(t, tp.Stop())
	require.NoError(t, tp.Stop(), "idempotent")
	require.NotNil(t, tp.cmd.ProcessState, "process %d waited for", pid)
	_, err = os.Stat(tp.LogPath())
	require.ErrorIs(t, err, os.ErrNotExist, "a clean stop removes the log")
	for _, addr := range []string{tp.Address(), strings.TrimPrefix(tp.UIURL(), "http://")} {
		l, err := net.Listen("tcp", addr)
		require.NoError(t, err, "%s is free after Stop", addr)
		_ = l.Close()
	}
}

// Asking for a port in use fails at once instead of trusting whatever
// answers there.
func TestStartTemporalPortInUse(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	_, err = StartTemporal(context.Background(), TemporalOptions{Port: l.Addr().(*net.TCPAddr).Port})
	require.ErrorContains(t, err, "in use")
}
