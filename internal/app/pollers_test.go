package app

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flashsale/flashsale/internal/config"
)

// A Config built by hand (zero WorkflowPollers) must not fall back to the
// SDK's 2, nor reach its panic on 1.
func TestWorkflowPollers(t *testing.T) {
	require.Equal(t, config.DefaultWorkflowPollers, workflowPollers(0))
	require.Equal(t, config.DefaultWorkflowPollers, workflowPollers(1))
	require.Equal(t, 2, workflowPollers(2))
	require.Equal(t, 16, workflowPollers(16))
}
