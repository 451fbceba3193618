package testenv

import (
	"net"
	"strconv"
	"testing"
)

// FreePort is a TCP port on 127.0.0.1 that nothing listened on a moment
// ago: for a server the test starts, or an address where nothing answers
// (a dependency that is down).
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("free port: %v", err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	if err := l.Close(); err != nil {
		t.Fatalf("free port: %v", err)
	}
	return port
}

// FreeAddr is FreePort as host:port.
func FreeAddr(t testing.TB) string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(FreePort(t)))
}
