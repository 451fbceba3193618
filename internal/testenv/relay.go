package testenv

import (
	"io"
	"net"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// Relay forwards TCP connections to addr until stop closes the listener
// and every relayed connection: afterwards the returned address refuses
// connections, as a dependency that went away does under a client that
// was connected to it. The test's cleanup stops it too.
func Relay(t testing.TB, addr string) (listen string, stop func()) {
	return DelayRelay(t, addr, 0)
}

// DelayRelay is Relay with every chunk delivered delay after it arrived,
// in each direction, so a round trip through it costs 2 x delay more: the
// network between an application and its database, on one machine (this
// kernel has no netem qdisc). Each direction of a connection keeps its
// bytes in order and never waits for the other. A chunk that arrives
// while an earlier one waits is stamped on arrival and delivered at its
// own time, not after the earlier one's wait: the delay adds latency, not
// a bandwidth limit. Delivery is on time to some microseconds (see
// pace); still measure the round trip through it against one straight
// to the service.
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

// chunk is bytes read from one side, due at the other.
type chunk struct {
	due time.Time
	b   []byte
}

// forward copies src to dst, each read delivered delay after it arrived.
// The reader only reads and stamps; a pacer of this direction delivers
// each chunk when it is due. Reading never waits for a delivery, so two
// chunks in flight are each delayed once.
func forward(dst, src net.Conn, delay time.Duration) {
	if delay <= 0 {
		_, _ = io.Copy(dst, src)
		return
	}
	// Deep enough for any request/answer protocol; a peer that floods
	// past it waits in the socket, as behind a slow link.
	q := make(chan chunk, 1024)
	done := make(chan struct{})
	go func() { defer close(done); pace(dst, q) }()
	defer func() { close(q); <-done }()
	read := stampedReader(src)
	for {
		buf := make([]byte, 32<<10)
		n, at, err := read(buf)
		if n > 0 {
			q <- chunk{due: at.Add(delay), b: buf[:n]}
		}
		if err != nil {
			return
		}
	}
}

// stampedReader reads c with the time the kernel received the bytes
// (SO_TIMESTAMPNS, the newest segment of the read), so the time this
// goroutine took to wake up is part of the delay, not added to it, as on
// a real link where nothing wakes in between. Where the kernel gives no
// stamp it falls back to the time the read returned.
func stampedReader(c net.Conn) func([]byte) (int, time.Time, error) {
	plain := func(b []byte) (int, time.Time, error) {
		n, err := c.Read(b)
		return n, time.Now(), err
	}
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return plain
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return plain
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1)
	}); err != nil || serr != nil {
		return plain
	}
	oob := make([]byte, unix.CmsgSpace(3*16))
	return func(b []byte) (int, time.Time, error) {
		var n, oobn int
		var rerr error
		err := rc.Read(func(fd uintptr) bool {
			n, oobn, _, _, rerr = unix.Recvmsg(int(fd), b, oob, 0)
			return rerr != unix.EAGAIN
		})
		at := time.Now()
		if err == nil {
			err = rerr
		}
		if err != nil {
			return 0, at, err
		}
		if n == 0 {
			return 0, at, io.EOF
		}
		if msgs, perr := unix.ParseSocketControlMessage(oob[:oobn]); perr == nil {
			for _, m := range msgs {
				if m.Header.Level == unix.SOL_SOCKET && m.Header.Type == unix.SCM_TIMESTAMPNS && len(m.Data) >= 16 {
					ts := *(*unix.Timespec)(unsafe.Pointer(&m.Data[0]))
					// The wall clock's stamp, read against the wall
					// clock (a chunk is due in time.Time's monotonic
					// terms from here on).
					if k := time.Unix(ts.Unix()); k.Before(at) && at.Sub(k) < time.Second {
						at = at.Add(-at.Sub(k))
					}
				}
			}
		}
		return n, at, nil
	}
}

// spinFor is how long before a chunk is due the pacer stops sleeping and
// polls the clock: the kernel's sleep wakes some tens of microseconds late
// on this machine even with the thread's timer slack at 1 ns (measured:
// p50 23us, p90 46us late at load 4), so sleeping to the due time makes
// every chunk late. Spinning costs CPU, so only the last stretch spins.
const spinFor = 30 * time.Microsecond

// pace writes each chunk of q to dst when it is due. It sleeps in the
// kernel (nanosleep holds its thread; the runtime's timers wait in whole
// milliseconds when the process is idle, which made a 125us delay 1-4 ms)
// with the thread's timer slack at 1 ns (the default 50us would be added
// to every sleep; the slack is per thread and a goroutine moves between
// threads, hence set before each sleep). It is not locked to a thread:
// waking a goroutine on a thread of its own cost tens of microseconds a
// chunk here, waking one on the reader's own costs almost nothing. After
// a failed write it drains q so the reader is never blocked.
func pace(dst net.Conn, q <-chan chunk) {
	failed := false
	for c := range q {
		if failed {
			continue
		}
		if d := time.Until(c.due) - spinFor; d > 0 {
			_ = unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0)
			ts := unix.NsecToTimespec(d.Nanoseconds())
			for unix.Nanosleep(&ts, &ts) == unix.EINTR {
			}
		}
		for time.Now().Before(c.due) {
		}
		if _, err := dst.Write(c.b); err != nil {
			failed = true
		}
	}
}
