package devstack

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"
)

// TemporalNamespace is the namespace the dev server always creates, and the
// one the search attributes are registered in.
const TemporalNamespace = "default"

// readyTimeout bounds the wait for a dev server that neither answers nor
// exits. It starts in a few seconds; a first start with a database file may
// take a little longer while SQLite creates its schema.
const readyTimeout = 2 * time.Minute

// TemporalOptions configures StartTemporal.
type TemporalOptions struct {
	// Port is the frontend gRPC port, UIPort the Web UI's; 0 picks a free
	// loopback port.
	Port, UIPort int
	// DBFile keeps the server's history in this SQLite file, so it survives
	// a restart; empty keeps everything in memory.
	DBFile string
	// DynamicConfig are key=value dynamic-config settings; nil means
	// DefaultDynamicConfig(). The bench passes its A and B sides here.
	DynamicConfig []string
	// Progress receives what a person waiting should see: the CLI build on
	// first use and the server start. Nil discards it.
	Progress io.Writer
}

// Temporal is a Temporal dev server running as a child process.
type Temporal struct {
	child
	port   int
	uiPort int
}

// StartTemporal runs `temporal server start-dev` with the flags of
// scripts/temporal-dev.sh on loopback ports and returns once the frontend
// serves the default namespace and the Web UI answers. The CLI is found on
// PATH or in go install's directory, and installed there if missing (see
// TemporalCLIVersion).
//
// The server runs in its own process group, so Stop ends it and anything it
// started; on Linux it is also killed if this process dies without calling
// Stop. Its output goes to a log file (LogPath). ctx bounds the install and
// the wait for readiness, not the server's lifetime.
func StartTemporal(ctx context.Context, opts TemporalOptions) (*Temporal, error) {
	// Ports are picked free and bound by the server a moment later; a
	// process starting beside it (another test's server) can take one in
	// between. Only ports picked here are picked again.
	for attempt := 1; ; attempt++ {
		t, err := startTemporal(ctx, opts)
		if err == nil || attempt == 3 || opts.Port != 0 || opts.UIPort != 0 ||
			!errors.Is(err, errExited) || !strings.Contains(err.Error(), "address already in use") {
			return t, err
		}
	}
}

func startTemporal(ctx context.Context, opts TemporalOptions) (*Temporal, error) {
	w := opts.Progress
	if w == nil {
		w = io.Discard
	}
	bin, err := temporalBinary(ctx, "go", w)
	if err != nil {
		return nil, fmt.Errorf("start temporal: %w", err)
	}

	port, uiPort := opts.Port, opts.UIPort
	for _, p := range []*int{&port, &uiPort} {
		if *p != 0 {
			continue
		}
		if *p, err = freePort(); err != nil {
			return nil, fmt.Errorf("start temporal: %w", err)
		}
	}
	// An occupied port is refused up front: otherwise the readiness check
	// could be answered by whatever server holds it while ours dies.
	for _, p := range []int{port, uiPort} {
		if err := checkPortFree(p); err != nil {
			return nil, fmt.Errorf("start temporal: %w", err)
		}
	}

	logPath := filepath.Join(os.TempDir(), fmt.Sprintf("flashsale-temporal-%d.log", port))
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("start temporal: log file: %w", err)
	}
	dyn := opts.DynamicConfig
	if dyn == nil {
		dyn = DefaultDynamicConfig()
	}
	cmd := exec.Command(bin, temporalArgs(port, uiPort, opts.DBFile, dyn)...)
	t := &Temporal{child: newChild("temporal", cmd, logPath, logFile), port: port, uiPort: uiPort}

	fmt.Fprintf(w, "temporal: starting dev server on %s (Web UI %s, log %s)\n", t.Address(), t.UIURL(), logPath)
	start := time.Now()
	if err := t.spawn(); err != nil {
		_ = logFile.Close()
		return nil, fmt.Errorf("start temporal: %w", err)
	}
	if err := t.waitReady(ctx); err != nil {
		// The log is kept: it is what explains the failure.
		_ = t.stop(false)
		return nil, fmt.Errorf("start temporal: %w\n%s", err, t.logTail())
	}
	fmt.Fprintf(w, "temporal: ready in %s\n", time.Since(start).Round(100*time.Millisecond))
	return t, nil
}

// temporalArgs are scripts/temporal-dev.sh's flags (a test keeps the two in
// step). Why each one is there is explained in that script: the search
// attributes the order workflow sets, the dynamic config (settings.go:
// a transfer-queue poll rate that takes ~200 ms off every
// Update-with-Start and the tunings the bench measured), and SQLite settings
// worth 2-3x the workflow throughput.
func temporalArgs(port, uiPort int, dbFile string, dynamicConfig []string) []string {
	args := []string{
		"server", "start-dev",
		"--ip", loopback,
		"--port", strconv.Itoa(port),
		"--ui-port", strconv.Itoa(uiPort),
		"--log-level", "warn",
		"--search-attribute", "OrderStatus=Keyword",
		"--search-attribute", "UserId=Keyword",
		"--search-attribute", "SkuIds=KeywordList",
		"--sqlite-pragma", "journal_mode=wal",
		"--sqlite-pragma", "synchronous=normal",
	}
	for _, kv := range dynamicConfig {
		args = append(args, "--dynamic-config-value", kv)
	}
	if dbFile != "" {
		args = append(args, "--db-filename", dbFile)
	}
	return args
}

// waitReady polls until the frontend describes the default namespace and
// the Web UI answers HTTP, the child exits, or ctx (at most readyTimeout)
// ends.
func (t *Temporal) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	poll := time.NewTicker(200 * time.Millisecond)
	defer poll.Stop()
	var last error
	for {
		if last = t.ready(ctx); last == nil {
			return nil
		}
		select {
		case <-t.exited:
			return fmt.Errorf("%w before it was ready: %v", errExited, t.waitErr)
		case <-ctx.Done():
			return fmt.Errorf("not ready (last check: %v): %w", last, ctx.Err())
		case <-poll.C:
		}
	}
}

// ready makes one check of the frontend and the UI.
func (t *Temporal) ready(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	c, err := client.DialContext(ctx, client.Options{
		HostPort:  t.Address(),
		Namespace: TemporalNamespace,
		// Failed dials while the server boots are expected, not news.
		Logger: tlog.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil))),
	})
	if err != nil {
		return fmt.Errorf("dial frontend: %w", err)
	}
	defer c.Close()
	if _, err := c.WorkflowService().DescribeNamespace(ctx,
		&workflowservice.DescribeNamespaceRequest{Namespace: TemporalNamespace}); err != nil {
		return fmt.Errorf("describe namespace %s: %w", TemporalNamespace, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, t.UIURL(), nil)
	if err != nil {
		return fmt.Errorf("web ui: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("web ui: %w", err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("web ui: %s", resp.Status)
	}
	return nil
}

// Address is the frontend's host:port (TEMPORAL_ADDRESS).
func (t *Temporal) Address() string { return hostPort(t.port) }

// UIURL is the Web UI's base URL.
func (t *Temporal) UIURL() string { return "http://" + hostPort(t.uiPort) }

// LogPath is the file the server's output goes to (see Stop for when it is
// removed).
func (t *Temporal) LogPath() string { return t.logPath }

// Stop ends the server: SIGTERM to its process group, SIGKILL after
// stopGrace, then it waits for the process. The log file is removed when the
// server was still running, since nothing went wrong that it could explain;
// it is kept when the server had died by itself. It is safe to call more
// than once.
func (t *Temporal) Stop() error { return t.stop(true) }

// checkPortFree fails if something listens on the loopback port.
func checkPortFree(port int) error {
	l, err := net.Listen("tcp", hostPort(port))
	if err != nil {
		return fmt.Errorf("port %d is in use: %w", port, err)
	}
	return l.Close()
}
