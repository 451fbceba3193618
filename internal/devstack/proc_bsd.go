//go:build unix && !linux

package devstack

import "syscall"

// childProcAttr puts the child in its own process group, so Stop can signal
// everything it started at once. These systems have no parent-death signal;
// Stop is the only way the server ends with its parent.
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
