package audit_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flashsale/flashsale/activities/contract"
	"github.com/flashsale/flashsale/internal/audit"
)

func TestOversoldAndUndersold(t *testing.T) {
	for name, tc := range map[string]struct {
		s               audit.SKUState
		over, undersold int64
	}{
		"sold out cleanly": {audit.SKUState{Total: 20, Sold: 20, PaidUnits: 20}, 0, 0},
		// Oversold, and the unit sold twice is not also counted undersold.
		"one sold twice":         {audit.SKUState{Total: 20, Sold: 21, PaidUnits: 21}, 1, 0},
		"sold without a payment": {audit.SKUState{Total: 20, Sold: 20, PaidUnits: 19}, 1, 0},
		"a unit left on sale":    {audit.SKUState{Total: 20, Sold: 19, Available: 1, PaidUnits: 19}, 0, 1},
		"a unit lost":            {audit.SKUState{Total: 20, Sold: 19, PaidUnits: 19}, 0, 2},
		"redis short of mysql": {audit.SKUState{Total: 20, Sold: 20, PaidUnits: 20,
			Redis: contract.StockObservation{Drift: 2}}, 0, 2},
	} {
		t.Run(name, func(t *testing.T) {
			require.Equal(t, tc.over, tc.s.Oversold())
			require.Equal(t, tc.undersold, tc.s.Undersold())
		})
	}
}
