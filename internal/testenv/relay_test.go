package testenv

import (
	"bytes"
	"crypto/rand"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// echo serves every connection by writing back what it reads.
func echo(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { _, _ = io.Copy(c, c); _ = c.Close() }()
		}
	}()
	return ln.Addr().String()
}

// Many writes in flight at once, on several connections, each direction
// paced by its own queue: every byte arrives once and in order.
func TestDelayRelayKeepsEveryConnectionsBytesInOrder(t *testing.T) {
	addr, _ := DelayRelay(t, echo(t), 200*time.Microsecond)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			c, err := net.Dial("tcp", addr)
			if !assert.NoError(t, err) {
				return
			}
			defer c.Close()
			sent := make([]byte, 256<<10)
			_, _ = rand.Read(sent)
			go func() {
				// Small writes, not waiting for answers: many chunks
				// queue in each direction at once.
				for off := 0; off < len(sent); off += 1000 {
					if _, err := c.Write(sent[off:min(off+1000, len(sent))]); err != nil {
						return
					}
				}
			}()
			got := make([]byte, len(sent))
			_, err = io.ReadFull(c, got)
			if assert.NoError(t, err) && !bytes.Equal(sent, got) {
				t.Errorf("the echo through the relay differs from what was sent")
			}
		})
	}
	wg.Wait()
}

// Stopping the relay closes the connections it carries: a reader through
// it sees the end, as a client of a dependency that went away does.
func TestDelayRelayStopEndsItsConnections(t *testing.T) {
	addr, stop := DelayRelay(t, echo(t), 100*time.Microsecond)
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Write([]byte("ping"))
	require.NoError(t, err)
	b := make([]byte, 4)
	_, err = io.ReadFull(c, b)
	require.NoError(t, err)
	require.Equal(t, "ping", string(b))
	stop()
	_, err = c.Read(b)
	require.Error(t, err)
}
