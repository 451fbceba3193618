package testenv

import (
	"io"
	"net"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Relay forwards TCP connections to addr until stop closes the listener
// and every relayed connection: afterwards the returned address refuses
// connections, as a dependency that went away does under a client that
// was connected to it. The test's cleanup stops it too.
func Relay(t testing.TB, addr string) (listen string, stop func()) {
	return DelayRelay(t, addr, 0)
}

// DelayRelay is Relay with every byte held for delay in each direction, so
// a round trip through it costs 2 x delay more: the network between an
// application and its database, on one machine. This kernel has no netem
// qdisc. Each direction keeps its bytes in order and never waits for the
// other, so the delay adds latency, not a bandwidth limit. The sleeps are
// the kernel's (sleep), some tens of microseconds late on a busy machine:
// measure the round trip through it rather than assume it.
func DelayRelay(t testing.TB, addr string, delay time.Duration) (listen string, stop func()) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", addr)
			if err != nil {
				_ = c.Close()
				continue
			}
			mu.Lock()
			conns = append(conns, c, up)
			mu.Unlock()
			go func() { forward(up, c, delay); _ = up.Close() }()
			go func() { forward(c, up, delay); _ = c.Close() }()
		}
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			_ = ln.Close()
			mu.Lock()
			defer mu.Unlock()
			for _, c := range conns {
				_ = c.Close()
			}
		})
	}
	t.Cleanup(stop)
	return ln.Addr().String(), stop
}

// forward copies src to dst, each read delivered delay after it arrived.
// One goroutine reads, waits and writes: bytes that arrive while it waits
// wait in the socket until it has written, so two chunks in flight in one
// direction are delayed more than once. A database protocol has one
// request (or one answer) in flight per connection, and a goroutine
// handing chunks to another cost more than the delay on a loaded machine.
func forward(dst, src net.Conn, delay time.Duration) {
	if delay <= 0 {
		_, _ = io.Copy(dst, src)
		return
	}
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			sleep(delay)
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// sleep blocks the goroutine's thread in nanosleep(2). time.Sleep cannot
// wait less than about a millisecond on an idle Go process (the runtime's
// poller waits in whole milliseconds), which made a 125us delay 1-4 ms;
// the kernel's timer is late by its slack (50us) at most when idle, and it
// burns no CPU, unlike spinning.
func sleep(d time.Duration) {
	ts := syscall.NsecToTimespec(d.Nanoseconds())
	for syscall.Nanosleep(&ts, &ts) == syscall.EINTR {
	}
}
