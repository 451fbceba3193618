package testenv

import (
	"bytes"
	"sync"
)

// Buffer is a bytes.Buffer that goroutines may write while the test reads
// it: a child process's output copied by exec, a logger shared by an API,
// a worker and the test. The zero value is ready to use.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// Bytes is a copy of what was written so far.
func (b *Buffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.buf.Bytes())
}

// String is what was written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Tail is the last n lines written so far, without the final newline.
func (b *Buffer) Tail(n int) string {
	lines := bytes.Split(bytes.TrimRight(b.Bytes(), "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}
