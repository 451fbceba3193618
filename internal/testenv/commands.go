package testenv

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// BuildCommands builds the module's commands for a test that runs the real
// binaries, into a directory of the test's own, and returns the directory.
// Each of cmds is a command's folder relative to the test's package
// ("../worker", or "." for the package under test); its binary is named
// after the folder ("worker"). tags are build tags ("faults"); none is a
// production build.
func BuildCommands(t testing.TB, tags string, cmds ...string) string {
	t.Helper()
	dir := t.TempDir()
	if err := buildCommands(dir, tags, cmds); err != nil {
		t.Fatal(err)
	}
	return dir
}

// RunCommand runs the command name of bin (a BuildCommands directory)
// with args and env, and returns what it printed on stdout and on stderr
// and how it exited.
func RunCommand(ctx context.Context, env []string, bin, name string, args ...string) (stdout, stderr []byte, err error) {
	cmd := exec.CommandContext(ctx, filepath.Join(bin, name), args...)
	cmd.Env = env
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	return o.Bytes(), e.Bytes(), err
}

// MainWithCommands is BuildCommands for a TestMain, whose suite shares the
// binaries: it builds cmds into a temporary directory, sets *bin to it,
// runs the suite (run: m.Run, or a function around it), removes the
// directory and returns the exit code for os.Exit. A failed build exits
// 1 with the compiler's output on stderr, running nothing.
func MainWithCommands(run func() int, bin *string, tags string, cmds ...string) int {
	dir, err := os.MkdirTemp("", "flashsale-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = os.RemoveAll(dir) }()
	if err := buildCommands(dir, tags, cmds); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	*bin = dir
	return run()
}

func buildCommands(dir, tags string, cmds []string) error {
	for _, cmd := range cmds {
		abs, err := filepath.Abs(cmd)
		if err != nil {
			return err
		}
		name := filepath.Base(abs)
		args := []string{"build"}
		if tags != "" {
			args = append(args, "-tags", tags)
		}
		args = append(args, "-o", filepath.Join(dir, name), cmd)
		if out, err := exec.Command("go", args...).CombinedOutput(); err != nil {
			return fmt.Errorf("build %s: %v\n%s", name, err, out)
		}
	}
	return nil
}
