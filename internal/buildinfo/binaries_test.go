//go:build integration

package buildinfo_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const fallbacks = "-X github.com/flashsale/flashsale/internal/buildinfo.Revision=feedface " +
	"-X github.com/flashsale/flashsale/internal/buildinfo.Version=v0.0.0-test"

// TestVersionFlag runs the three processes with --version and -version
// against no services at all: each prints one line and exits 0 without
// reading the environment or connecting to anything. They are built as the
// Dockerfile builds them, without VCS stamping and with the revision and
// version passed by -ldflags -X, which is what they print.
func TestVersionFlag(t *testing.T) {
	root := git(t, "", "rev-parse", "--show-toplevel")
	bin := t.TempDir()
	build(t, root, bin+string(os.PathSeparator), "-buildvcs=false", "-ldflags", fallbacks, "./worker", "./api", "./starter")
	for _, cmd := range []string{"worker", "api", "starter"} {
		for _, flag := range []string{"--version", "-version"} {
			line := version(t, filepath.Join(bin, cmd), flag)
			want := cmd + " github.com/flashsale/flashsale v0.0.0-test revision feedface go"
			if !strings.HasPrefix(line, want) {
				t.Fatalf("%s %s printed %q, want %q...", cmd, flag, line, want)
			}
		}
	}
}

// TestVersionStamped: built inside a git checkout with VCS stamping, the
// revision is the checkout's HEAD, "+modified" once the tree has a change,
// and the stamp wins over an -ldflags fallback. The toolchain stamps only a
// checkout whose .git is a directory (cmd/go's vcs.go: not a `git worktree`,
// whose .git is a file, and not with this machine's GOFLAGS=-buildvcs=false),
// so the test copies this tree, uncommitted changes included, into a fresh
// repository and commits it there.
func TestVersionStamped(t *testing.T) {
	root := git(t, "", "rev-parse", "--show-toplevel")
	repo := t.TempDir()
	for _, f := range strings.Split(git(t, root, "ls-files", "-co", "--exclude-standard"), "\n") {
		data, err := os.ReadFile(filepath.Join(root, f))
		if os.IsNotExist(err) {
			continue // deleted in the work tree
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(repo, f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(repo, f), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git(t, repo, "init", "--quiet")
	git(t, repo, "add", "-A")
	git(t, repo, "-c", "user.name=test", "-c", "user.email=test@example.invalid", "commit", "--quiet", "-m", "snapshot")
	head := git(t, repo, "rev-parse", "HEAD")
	bin := filepath.Join(t.TempDir(), "worker")

	build(t, repo, bin, "-buildvcs=true", "-ldflags", fallbacks, "./worker")
	if line := version(t, bin, "--version"); !strings.Contains(line, " revision "+head+" committed ") {
		t.Fatalf("clean checkout: %q, want revision %s", line, head)
	}

	// An untracked file is a change to `git status`, so to the toolchain.
	if err := os.WriteFile(filepath.Join(repo, "scratch.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	build(t, repo, bin, "-buildvcs=true", "./worker")
	if line := version(t, bin, "--version"); !strings.Contains(line, " revision "+head+"+modified ") {
		t.Fatalf("modified checkout: %q, want revision %s+modified", line, head)
	}
}

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git %v: %v", args, err)
	}
	return strings.TrimSpace(string(out))
}

func build(t *testing.T, dir, out string, args ...string) {
	t.Helper()
	args = append([]string{"build", "-o", out}, args...)
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %v: %v\n%s", args, err, out)
	}
}

// version runs bin with flag in an empty environment and returns the one
// line it printed.
func version(t *testing.T, bin, flag string) string {
	t.Helper()
	cmd := exec.Command(bin, flag)
	cmd.Env = []string{"TEMPORAL_ADDRESS=127.0.0.1:1", "REDIS_ADDR=127.0.0.1:1", "MYSQL_DSN=root@tcp(127.0.0.1:1)/x"}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil || stderr.Len() > 0 {
		t.Fatalf("%s %s: %v, stderr %q", bin, flag, err, stderr.String())
	}
	line := stdout.String()
	if strings.Count(line, "\n") != 1 || !strings.HasSuffix(line, "\n") {
		t.Fatalf("%s %s printed %q, want one line", bin, flag, line)
	}
	t.Logf("%s", strings.TrimSpace(line))
	return strings.TrimSpace(line)
}
