package devstack

// PID is the server process's id, for measuring the CPU it uses (the
// benchmark divides it by the orders it served).
func (t *Temporal) PID() int {
	if t.cmd == nil || t.cmd.Process == nil {
		return 0
	}
	return t.cmd.Process.Pid
}
