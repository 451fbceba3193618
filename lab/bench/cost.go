package bench

import "github.com/flashsale/flashsale/internal/procstat"

// The CPU readings are internal/procstat's, shared with the product's own
// benchmarks; the lab names them here where its measurements read them.
type Proc = procstat.Proc

var (
	ProcessCPU = procstat.ProcessCPU
	FindPID    = procstat.FindPID
	CPUOf      = procstat.CPUOf
)
