// Package procstat reads what a process on this Linux machine has cost:
// its CPU time from /proc, for the benchmarks that charge CPU to each
// process of a sale (the lab's, and the hot-row benchmark of orderdb).
package procstat

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// clockTicks is USER_HZ, 100 on every Linux the project targets.
const clockTicks = 100

// ProcessCPU returns the user+system CPU time a process has used, from
// /proc/<pid>/stat (Linux only).
func ProcessCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("read cpu of pid %d: %w", pid, err)
	}
	// The command name (field 2) may hold spaces; fields after it are
	// counted from the closing parenthesis.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("parse /proc/%d/stat", pid)
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 (state); utime is field 14, stime field 15.
	if len(f) < 13 {
		return 0, fmt.Errorf("parse /proc/%d/stat: %d fields", pid, len(f))
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("parse /proc/%d/stat times", pid)
	}
	return time.Duration(utime+stime) * time.Second / clockTicks, nil
}

// FindPID returns the first process whose command line (its arguments
// joined by spaces, as redis-server rewrites its own title to name its
// address) contains every one of parts.
func FindPID(parts ...string) (int, bool) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, false
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil || len(b) == 0 {
			continue
		}
		cmd := strings.ReplaceAll(string(b), "\x00", " ")
		found := true
		for _, p := range parts {
			if !strings.Contains(cmd, p) {
				found = false
				break
			}
		}
		if found {
			return pid, true
		}
	}
	return 0, false
}

// Proc is a process whose CPU a measurement reads: a name for the report
// and its pid.
type Proc struct {
	Name string
	PID  int
}

// CPUOf reads every process's CPU time, in the order given; a process
// that cannot be read counts zero.
func CPUOf(procs []Proc) []time.Duration {
	out := make([]time.Duration, len(procs))
	for i, p := range procs {
		out[i], _ = ProcessCPU(p.PID)
	}
	return out
}
