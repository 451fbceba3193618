package testenv

import (
	"fmt"
	"strings"
	"sync"
	"testing"
)

func TestBufferTakesConcurrentWrites(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 100 {
				_, _ = fmt.Fprintf(&b, "w%d line %d\n", i, j)
			}
		})
	}
	wg.Wait()
	if got := strings.Count(b.String(), "\n"); got != 800 {
		t.Fatalf("lines = %d, want 800", got)
	}
	if got := len(b.Bytes()); got != len(b.String()) {
		t.Fatalf("Bytes has %d bytes, String %d", got, len(b.String()))
	}
}

func TestBufferTail(t *testing.T) {
	var b Buffer
	_, _ = b.Write([]byte("one\ntwo\nthree\n"))
	if got := b.Tail(2); got != "two\nthree" {
		t.Fatalf("Tail(2) = %q", got)
	}
	if got := b.Tail(10); got != "one\ntwo\nthree" {
		t.Fatalf("Tail(10) = %q", got)
	}
}
