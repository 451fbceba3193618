package devstack

import "syscall"

// childProcAttr puts the child in its own process group, so Stop can signal
// everything it started at once, and asks the kernel to SIGKILL it when the
// thread that started it dies: a demo killed with Ctrl-C twice, or by
// SIGKILL, must not leave a Temporal server holding its ports. SIGKILL is
// safe for the SQLite file (WAL mode survives a crash).
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
