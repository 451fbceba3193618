//go:build !unix

package devstack

import (
	"errors"
	"os"
	"syscall"
)

const (
	sigTerm = syscall.Signal(15)
	sigKill = syscall.Signal(9)
)

// childProcAttr has nothing to add where there are no process groups.
func childProcAttr() *syscall.SysProcAttr { return nil }

// signalGroup kills p: without process groups or SIGTERM, only a hard kill
// of the server itself is possible.
func signalGroup(p *os.Process, _ syscall.Signal) error {
	err := p.Kill()
	if errors.Is(err, os.ErrProcessDone) {
		return nil
	}
	return err
}
