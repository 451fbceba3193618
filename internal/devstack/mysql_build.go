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

// mysqldModule is the embedded MySQL server: a module of its own in the
// checkout (internal/devstack/mysqld), so that go-mysql-server and what it
// brings (vitess, a WebAssembly runtime, ICU regexes) stay out of the
// product's go.mod and binaries. It is not published anywhere a go install
// could fetch it from, so it is built from the checkout on first use.
const mysqldModule = "github.com/flashsale/flashsale/internal/devstack/mysqld"

// mysqldDir is where mysqldModule lives, from the checkout's root.
var mysqldDir = filepath.Join("internal", "devstack", "mysqld")

// builtMySQLD remembers this process's build: the go command's up-to-date
// check costs about half a second of CPU, and tests start many servers.
var builtMySQLD struct {
	sync.Mutex
	path string
}

// mysqldBinary returns the path of the mysqld binary, built with go build
// into the user's cache directory (flashsale/flashsale-mysqld). go build
// links again only when a source file or dependency changed; the first
// build compiles go-mysql-server, about a minute on two cores with a cold
// build cache. A file lock keeps concurrent demos and tests from writing the
// binary at once.
func mysqldBinary(ctx context.Context, w io.Writer) (string, error) {
	builtMySQLD.Lock()
	defer builtMySQLD.Unlock()
	if builtMySQLD.path != "" {
		return builtMySQLD.path, nil
	}
	goPath, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("the embedded MySQL is built with the go command, which is not on PATH: %w", err)
	}
	src, err := moduleSource()
	if err != nil {
		return "", err
	}
	dir, err := os.UserCacheDir()
	if err != nil {
		dir = os.TempDir()
	}
	dir = filepath.Join(dir, "flashsale")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("build mysqld: %w", err)
	}
	bin := filepath.Join(dir, "flashsale-mysqld"+exeSuffix())

	unlock, err := lockFile(filepath.Join(dir, "flashsale-mysqld.lock"))
	if err != nil {
		return "", fmt.Errorf("build mysqld: %w", err)
	}
	defer unlock()
	start := time.Now()
	cmd := exec.CommandContext(ctx, goPath, "build", "-o", bin, ".")
	cmd.Dir = src
	// The module is in no workspace: a go.work above it (the checkout's,
	// for the lab) would refuse to build it.
	cmd.Env = append(os.Environ(), "GOWORK=off")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("build mysqld: go build in %s: %w\n%s", src, err, out)
	}
	// An up-to-date binary costs the go command about half a second;
	// anything longer was a build a person waiting should hear about.
	if d := time.Since(start); d > 5*time.Second {
		fmt.Fprintf(w, "mysql: built the embedded MySQL server (%s) in %s\n", bin, d.Round(time.Second))
	}
	builtMySQLD.path = bin
	return bin, nil
}

// moduleSource finds mysqldModule's directory: the one beside the file this
// was compiled from (go run, go build and go test record it), else under the
// current directory or one above it. A binary built with -trimpath and run
// outside the checkout has neither.
func moduleSource() (string, error) {
	var built string
	if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
		// file is <checkout>/internal/devstack/mysql_build.go.
		built = filepath.Join(filepath.Dir(file), "..", "..")
	}
	wd, _ := os.Getwd()
	return findModule(built, wd)
}

// findModule returns the mysqld module's directory under the checkout root
// built, else under wd or the first directory above it that holds it.
func findModule(built, wd string) (string, error) {
	var candidates []string
	if built != "" {
		candidates = append(candidates, filepath.Join(built, mysqldDir))
	}
	if wd != "" {
		for d := filepath.Clean(wd); ; d = filepath.Dir(d) {
			candidates = append(candidates, filepath.Join(d, mysqldDir))
			if filepath.Dir(d) == d {
				break
			}
		}
	}
	for _, d := range candidates {
		if isModule(filepath.Join(d, "go.mod")) {
			return filepath.Clean(d), nil
		}
	}
	return "", errors.New("the embedded MySQL is built from the flashsale source, and neither this binary's " +
		"build directory nor the current directory holds it: run the demo from a checkout " +
		"(go run ./starter demo), or name a MySQL with MYSQL_DSN")
}

// isModule reports whether the go.mod at path declares mysqldModule.
func isModule(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer func() { _ = f.Close() }() // only read from
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fields := strings.Fields(sc.Text()); len(fields) == 2 && fields[0] == "module" {
			return strings.Trim(fields[1], `"`) == mysqldModule
		}
	}
	return false
}
