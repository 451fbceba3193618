package procstat

import (
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestProcessCPUGrowsWithWork(t *testing.T) {
	before, err := ProcessCPU(os.Getpid())
	require.NoError(t, err)
	deadline := time.Now().Add(300 * time.Millisecond)
	x := 0
	for time.Now().Before(deadline) {
		x++
	}
	after, err := ProcessCPU(os.Getpid())
	require.NoError(t, err)
	require.Greater(t, after, before, "busy loop of %d iterations used no CPU?", x)
	_, err = ProcessCPU(-1)
	require.Error(t, err)
}
