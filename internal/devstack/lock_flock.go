//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package devstack

import (
	"os"
	"syscall"
)

// lockFile takes an exclusive lock on the file at path, creating it, and
// returns its release. Other processes calling it wait.
func lockFile(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		_ = f.Close()
		return nil, err
	}
	// Closing the file releases the lock.
	return func() { _ = f.Close() }, nil
}
