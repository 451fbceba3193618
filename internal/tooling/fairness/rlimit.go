package fairness

import (
	"fmt"
	"syscall"
)

// RaiseFileLimit makes room for n open files in this process: the soft
// limit up to n, and the hard one too when it is lower and the process may
// raise it (root). The crowd's 10,900 connections, each two descriptors
// when the API runs in the same process, do not fit the usual 20,000.
func RaiseFileLimit(n uint64) error {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return fmt.Errorf("read the open files limit: %w", err)
	}
	if lim.Cur >= n {
		return nil
	}
	want := syscall.Rlimit{Cur: n, Max: max(lim.Max, n)}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &want); err != nil {
		return fmt.Errorf("the fairness benchmark needs %d open files (the limit is %d, at most %d): run it as root or after `ulimit -n %d`: %w",
			n, lim.Cur, lim.Max, n, err)
	}
	return nil
}
