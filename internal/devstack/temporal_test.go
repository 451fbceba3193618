package devstack

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/sdk/client"
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

	args := temporalArgs(7233, 8233, "")
	pairs := map[string]bool{}
	for i := 0; i+1 < len(args); i++ {
		pairs[args[i]+" "+args[i+1]] = true
	}
	for _, m := range want {
		f, v := m[1]+m[3], m[2]+m[4]
		require.True(t, pairs[f+" "+v], "missing %s %s", f, v)
	}
	require.Equal(t, []string{"server", "start-dev", "--ip", "127.0.0.1", "--port", "7233", "--ui-port", "8233"}, args[:8])
	require.NotContains(t, args, "--db-filename", "in memory unless a file is asked for")
	withFile := temporalArgs(1, 2, "/tmp/x.db")
	require.Equal(t, []string{"--db-filename", "/tmp/x.db"}, withFile[len(withFile)-2:])
}

// A dev server on free ports serves the default namespace with the order
// workflow's search attributes and the Web UI, and Stop frees its ports.
func TestStartTemporal(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Temporal dev server")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var progress syncBuffer
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

const childEnv = "DEVSTACK_TEMPORAL_CHILD"

// The server must not outlive a parent that dies without calling Stop
// (SIGKILL, a crash): it would keep the ports and, with a database file,
// the file. The test process re-runs itself as that parent and is killed.
func TestTemporalDiesWithParent(t *testing.T) {
	if os.Getenv(childEnv) != "" {
		runTemporalChild()
		return
	}
	if runtime.GOOS != "linux" {
		t.Skip("the parent-death signal is Linux only")
	}
	if testing.Short() {
		t.Skip("starts a Temporal dev server")
	}
	parent := exec.Command(os.Args[0], "-test.run=^TestTemporalDiesWithParent$")
	parent.Env = append(os.Environ(), childEnv+"=1")
	out, err := parent.StdoutPipe()
	require.NoError(t, err)
	parent.Stderr = os.Stderr
	require.NoError(t, parent.Start())
	t.Cleanup(func() { _ = parent.Process.Kill(); _ = parent.Wait() })

	var pid int
	var addr string
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if _, err := fmt.Sscanf(sc.Text(), "TEMPORAL %d %s", &pid, &addr); err == nil {
			break
		}
	}
	require.NotZero(t, pid, "the parent reported the server")
	t.Cleanup(func() { _ = killPID(pid) })

	require.NoError(t, parent.Process.Kill())
	_ = parent.Wait()
	require.Eventually(t, func() bool { return !processRunning(pid) }, 10*time.Second, 100*time.Millisecond,
		"temporal (pid %d) died with its parent", pid)
	require.Eventually(t, func() bool {
		l, err := net.Listen("tcp", addr)
		if err != nil {
			return false
		}
		_ = l.Close()
		return true
	}, 10*time.Second, 100*time.Millisecond, "%s is free", addr)
}

// runTemporalChild is the parent process of TestTemporalDiesWithParent: it
// starts the server, reports it and waits to be killed.
func runTemporalChild() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	tp, err := StartTemporal(ctx, TemporalOptions{Progress: os.Stderr})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("TEMPORAL %d %s\n", tp.cmd.Process.Pid, tp.Address())
	time.Sleep(5 * time.Minute)
}

// processRunning reports whether pid is alive and not a zombie. A killed
// server whose parent is gone may stay a zombie until init reaps it, which
// some containers' PID 1 never does; it holds no ports then.
func processRunning(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// The state follows the parenthesised command name.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || (s[i+2] != 'Z' && s[i+2] != 'X')
}

func killPID(pid int) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	return p.Kill()
}

// The first run installs the CLI with go install; the person waiting sees
// the go command's downloads, ticking elapsed-time lines and the result.
// A stub go command stands in for the three-minute build.
func TestInstallTemporalProgress(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the stub go command is a shell script")
	}
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
	out := &syncBuffer{}
	_, err := temporalBinary(context.Background(), "go", out)
	require.ErrorContains(t, err, "no route to proxy", "the go command's last words are in the error")

	t.Setenv("STUB_FAIL", "")
	out = &syncBuffer{}
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
	out = &syncBuffer{}
	again, err := temporalBinary(context.Background(), "go", out)
	require.NoError(t, err)
	require.Equal(t, bin, again)
	require.Empty(t, out.String())
}

// syncBuffer is a bytes.Buffer safe for the writer goroutines under test.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
