package devstack

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"time"
)

// stopGrace is how long Stop waits after SIGTERM before SIGKILL. The
// servers shut down in well under a second; this only bounds a hang.
const stopGrace = 10 * time.Second

// child is a server run as a child process (the Temporal dev server, the
// embedded MySQL), in its own process group, its output in a log file.
type child struct {
	name    string // for error messages: "temporal", "mysql"
	cmd     *exec.Cmd
	logPath string
	logFile *os.File

	exited  chan struct{} // closed when the process has been waited for
	waitErr error         // set before exited is closed

	stopOnce sync.Once
	stopErr  error
}

// newChild prepares cmd to run in its own process group with its output in
// logFile.
func newChild(name string, cmd *exec.Cmd, logPath string, logFile *os.File) child {
	if cmd.Stdout == nil {
		cmd.Stdout = logFile
	}
	cmd.Stderr = logFile
	cmd.SysProcAttr = childProcAttr()
	return child{name: name, cmd: cmd, logPath: logPath, logFile: logFile, exited: make(chan struct{})}
}

// spawn starts the process from a goroutine locked to its OS thread, which
// stays locked until the process has exited. Linux's parent-death signal
// (childProcAttr) fires when the thread that forked the child ends, not the
// process, and the Go runtime may retire an idle thread at any time: the
// lock keeps that thread alive exactly as long as the child.
func (c *child) spawn() error {
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		// No UnlockOSThread: when this goroutine returns the runtime ends
		// the thread, which is what we want once the child is gone.
		if err := c.cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		c.waitErr = c.cmd.Wait()
		close(c.exited)
	}()
	return <-started
}

// stop ends the process if it still runs. The log file is removed (when
// removeLog) only if the process was still running and stopped cleanly:
// then nothing went wrong that it could explain. It is safe to call more
// than once.
func (c *child) stop(removeLog bool) error {
	c.stopOnce.Do(func() {
		running := true
		select {
		case <-c.exited:
			running = false
		default:
		}
		if running {
			c.stopErr = c.terminate()
		}
		_ = c.logFile.Close()
		if removeLog && running && c.stopErr == nil {
			_ = os.Remove(c.logPath)
		}
	})
	return c.stopErr
}

// terminate sends SIGTERM to the process group, SIGKILL after stopGrace,
// and waits for the process.
func (c *child) terminate() error {
	var err error
	if serr := signalGroup(c.cmd.Process, sigTerm); serr != nil {
		err = fmt.Errorf("stop %s: %w", c.name, serr)
	}
	select {
	case <-c.exited:
	case <-time.After(stopGrace):
		if kerr := signalGroup(c.cmd.Process, sigKill); kerr != nil {
			err = errors.Join(err, fmt.Errorf("stop %s: kill: %w", c.name, kerr))
		}
		<-c.exited
	}
	return err
}

// logTail returns the end of the server's log for error messages.
func (c *child) logTail() string {
	b, err := os.ReadFile(c.logPath)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > 20 {
		lines = lines[len(lines)-20:]
	}
	return "last lines of " + c.logPath + ":\n" + strings.Join(lines, "\n")
}
