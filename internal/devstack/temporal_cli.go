package devstack

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"
)

// The Temporal CLI is run as a child process rather than linked in: its
// devserver package, at the server version the CLI pins (1.29.1), does not
// compile beside go.temporal.io/sdk v1.51 (the server's client wrappers lack
// RPCs the newer go.temporal.io/api adds).
const (
	// TemporalCLIVersion is the CLI installed when none is found. v1.5.1
	// (server 1.29.1, UI 2.42.1) installs with go install; later releases
	// carry a replace directive, which go install refuses.
	TemporalCLIVersion = "v1.5.1"
	temporalCLIPackage = "github.com/temporalio/cli/cmd/temporal"
)

// buildTick is how often the install prints an elapsed-time line, so a
// person watching a three-minute build knows it is not stuck.
var buildTick = 10 * time.Second

// temporalBinary returns the path of the Temporal CLI: `temporal` on PATH,
// else in the directory go install writes to ($GOBIN, or $GOPATH/bin). If
// neither has it, it installs TemporalCLIVersion there with goCmd, printing
// progress to w.
func temporalBinary(ctx context.Context, goCmd string, w io.Writer) (string, error) {
	if p, err := exec.LookPath("temporal"); err == nil {
		return p, nil
	}
	goPath, err := exec.LookPath(goCmd)
	if err != nil {
		return "", fmt.Errorf("temporal CLI not on PATH, and no go command to install it: %w", err)
	}
	dir, err := goBinDir(ctx, goPath)
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "temporal"+exeSuffix())
	if isExecutable(bin) {
		return bin, nil
	}
	if err := installTemporal(ctx, goPath, w); err != nil {
		return "", err
	}
	if !isExecutable(bin) {
		return "", fmt.Errorf("go install %s@%s succeeded but %s is missing", temporalCLIPackage, TemporalCLIVersion, bin)
	}
	return bin, nil
}

// goBinDir is where go install puts binaries: $GOBIN, else the first
// $GOPATH entry's bin.
func goBinDir(ctx context.Context, goPath string) (string, error) {
	out, err := exec.CommandContext(ctx, goPath, "env", "GOBIN", "GOPATH").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOBIN GOPATH: %w", err)
	}
	lines := strings.Split(strings.TrimRight(string(out), "\r\n"), "\n")
	if len(lines) > 0 && strings.TrimSpace(lines[0]) != "" {
		return strings.TrimSpace(lines[0]), nil
	}
	if len(lines) < 2 || strings.TrimSpace(lines[1]) == "" {
		return "", fmt.Errorf("go env: neither GOBIN nor GOPATH is set")
	}
	gopath := filepath.SplitList(strings.TrimSpace(lines[1]))[0]
	return filepath.Join(gopath, "bin"), nil
}

// installTemporal runs go install for the CLI. The build takes about three
// minutes on two cores, so w gets the go command's module downloads as they
// happen and, every buildTick, a line with the elapsed time and the number
// of packages compiled so far (go install -v names each one).
func installTemporal(ctx context.Context, goPath string, w io.Writer) error {
	target := temporalCLIPackage + "@" + TemporalCLIVersion
	fmt.Fprintf(w, "temporal: the Temporal CLI is not installed; building %s from the Go module proxy\n", target)
	fmt.Fprintf(w, "temporal: this happens once and takes about 3 minutes on 2 cores\n")

	cmd := exec.CommandContext(ctx, goPath, "install", "-v", target)
	// The project's GOFLAGS (say -mod=vendor) and a go.work must not leak
	// into an install of another module; scripts/temporal-dev.sh clears
	// GOFLAGS for the same reason.
	cmd.Env = append(os.Environ(), "GOFLAGS=", "GOWORK=off")
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw

	var (
		mu       sync.Mutex
		packages int
		tail     []string // last lines, for the error message
	)
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			line := sc.Text()
			mu.Lock()
			tail = append(tail, line)
			if len(tail) > 20 {
				tail = tail[1:]
			}
			// Package paths are counted, not printed: there are hundreds.
			// Everything else (downloads, errors) is worth seeing.
			isPkg := !strings.HasPrefix(line, "go: ") && !strings.ContainsAny(line, " \t")
			if isPkg {
				packages++
			}
			mu.Unlock()
			if !isPkg {
				fmt.Fprintf(w, "temporal:   %s\n", line)
			}
		}
		// Drain after a scanner error so the go command never blocks.
		_, _ = io.Copy(io.Discard, pr)
	}()

	start := time.Now()
	if err := cmd.Start(); err != nil {
		_ = pw.Close()
		<-scanned
		return fmt.Errorf("install temporal CLI: %w", err)
	}
	done := make(chan error, 1)
	go func() {
		err := cmd.Wait()
		_ = pw.Close()
		done <- err
	}()

	tick := time.NewTicker(buildTick)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			mu.Lock()
			n := packages
			mu.Unlock()
			// With a warm build cache nothing is compiled, only linked.
			detail := ""
			if n > 0 {
				detail = fmt.Sprintf(", %d packages compiled", n)
			}
			fmt.Fprintf(w, "temporal: building... %s elapsed%s\n", time.Since(start).Round(time.Second), detail)
		case err := <-done:
			<-scanned
			if err != nil {
				mu.Lock()
				last := strings.Join(tail, "\n")
				mu.Unlock()
				return fmt.Errorf("install temporal CLI: go install %s: %w\n%s", target, err, last)
			}
			fmt.Fprintf(w, "temporal: built the Temporal CLI in %s\n", time.Since(start).Round(time.Second))
			return nil
		}
	}
}

func exeSuffix() string {
	if runtime.GOOS == "windows" {
		return ".exe"
	}
	return ""
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	if err != nil || fi.IsDir() {
		return false
	}
	return runtime.GOOS == "windows" || fi.Mode().Perm()&0o111 != 0
}

// errExited reports that the dev server ended before it was ready.
var errExited = errors.New("temporal dev server exited")
