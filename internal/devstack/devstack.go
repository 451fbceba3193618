// Package devstack starts the services a flash sale needs on a machine that
// has nothing but Go: an embedded Redis (miniredis), and as child processes
// a MySQL-compatible store (go-mysql-server, package mysqld, built from this
// module on first use) and a Temporal dev server (the CLI, installed from
// the Go module proxy on first use). go-mysql-server is not linked here: its
// init costs every process that links it about a second of CPU (mysql.go).
//
// It exists for the one-command demo and for tests that must run anywhere.
// Production and the real-service tests (internal/testenv) use Redis,
// MariaDB and a Temporal server; this package only has to run the project's
// real code unchanged, and its tests prove that it does.
package devstack

import (
	"fmt"
	"net"
	"runtime"
	"strconv"
)

// loopback is where every embedded service listens: the demo is for this
// machine only, and nothing should be reachable from the network.
const loopback = "127.0.0.1"

// freePort asks the kernel for a free TCP port on the loopback interface.
//
// The port is put in TIME_WAIT by a connection that the listening side closes
// first: on Linux, ephemeral ports are random and a just-closed one can be
// handed out again at once (to Temporal's own internal services, say), but a
// port in TIME_WAIT is skipped by bind(:0) for about a minute while an
// explicit bind to it (SO_REUSEADDR, Go's default) still succeeds. This is
// the same trick the Temporal CLI's dev server uses for its internal ports.
func freePort() (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(loopback, "0"))
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	// macOS and Windows hand out ephemeral ports sequentially, so the extra
	// connection would only use one up.
	if runtime.GOOS == "darwin" || runtime.GOOS == "windows" {
		return port, nil
	}
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		return 0, fmt.Errorf("find a free port: reserve %d: %w", port, err)
	}
	defer c.Close()
	s, err := l.Accept()
	if err != nil {
		return 0, fmt.Errorf("find a free port: reserve %d: %w", port, err)
	}
	// The server side closes first, so its end (the port we keep) is the one
	// left in TIME_WAIT.
	_ = s.Close()
	return port, nil
}

// hostPort formats a loopback address.
func hostPort(port int) string { return net.JoinHostPort(loopback, strconv.Itoa(port)) }
