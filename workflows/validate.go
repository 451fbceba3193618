package workflows

import (
	"errors"
	"fmt"

	"go.temporal.io/sdk/workflow"

	"github.com/flashsale/flashsale"
)

// validate checks the order before any stock moves, so a bad request leaves
// nothing behind.
func (o *order) validate(ctx workflow.Context) error {
	err := o.in.Validate()
	if err == nil || lengthsOnly(o.in) != nil {
		return err
	}
	if !o.validatesStrictly(ctx) {
		o.logger.Warn("order started before the stricter validation; going on", "error", err)
		return nil
	}
	return err
}

// lengthsOnly is the check of orders recorded before validateChangeID:
// lengths, counts and quantities, no alphabet, no reserved prefix.
func lengthsOnly(in OrderInput) error {
	var errs []error
	if in.OrderID == "" || len(in.OrderID) > flashsale.MaxIDLength {
		errs = append(errs, fmt.Errorf("order_id must be 1-%d characters", flashsale.MaxIDLength))
	}
	if in.UserID == "" || len(in.UserID) > flashsale.MaxIDLength {
		errs = append(errs, fmt.Errorf("user_id must be 1-%d characters", flashsale.MaxIDLength))
	}
	if len(in.Items) == 0 || len(in.Items) > flashsale.MaxItems {
		errs = append(errs, fmt.Errorf("an order needs 1-%d items", flashsale.MaxItems))
	}
	seen := make(map[string]bool, len(in.Items))
	for _, it := range in.Items {
		if it.SKU == "" || len(it.SKU) > flashsale.MaxIDLength {
			errs = append(errs, fmt.Errorf("sku_id must be 1-%d characters", flashsale.MaxIDLength))
		}
		if it.Quantity < 1 || it.Quantity > flashsale.MaxItemQuantity {
			errs = append(errs, fmt.Errorf("quantity of %q must be 1-%d", it.SKU, flashsale.MaxItemQuantity))
		}
		if seen[it.SKU] {
			errs = append(errs, fmt.Errorf("sku %q appears twice; merge the lines", it.SKU))
		}
		seen[it.SKU] = true
	}
	if in.PaymentTimeout < 0 {
		errs = append(errs, errors.New("payment_timeout must not be negative"))
	}
	return errors.Join(errs...)
}
