// The parent-death signal devstack relies on is Linux only (proc_linux.go),
// so its test is built for Linux only rather than skipped elsewhere.

//go:build linux

package devstack

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const childEnv = "DEVSTACK_TEMPORAL_CHILD"

// The server must not outlive a parent that dies without calling Stop
// (SIGKILL, a crash): it would keep the ports and, with a database file,
// the file. The test process re-runs itself as that parent and is killed.
func TestTemporalDiesWithParent(t *testing.T) {
	if os.Getenv(childEnv) != "" {
		runTemporalChild()
		return
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
