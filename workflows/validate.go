package workflows

import (
	"go.temporal.io/sdk/workflow"
)

// validate checks the order before any stock moves, so a bad request leaves
// nothing behind. Every door checks the same (flashsale.Order.Validate);
// the workflow checks again for an order started past them (the Web UI, the
// CLI's temporal workflow start).
func (o *order) validate(_ workflow.Context) error {
	return o.in.Validate()
}
