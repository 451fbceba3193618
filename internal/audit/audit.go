// Package audit checks the invariants of a flash sale across MySQL, Redis
// and Temporal, and reports every breach as a structured violation. It is
// what the fault-injection suite runs after each fault, and what an
// operator runs (starter check) after a sale or an incident.
//
// The checker reads; it never repairs. Repairing Redis is the reconcile
// workflow's job, and it uses the same measurement of Redis against MySQL
// (activities.Reconciler) so the two can never disagree about what "in step"
// means.
package audit

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/flashsale/flashsale/activities"
	"github.com/flashsale/flashsale/activities/contract"
	"github.com/flashsale/flashsale/internal/inventory"
	"github.com/flashsale/flashsale/internal/orderdb"
	"github.com/flashsale/flashsale/workflows"
)

// DefaultGrace is how long an order may stay open past its pay-by time
// before it counts as stuck. The workflow closes it on its timer, then runs
// two short activities; a minute covers that and a worker restart.
const DefaultGrace = time.Minute

// reserveBudget bounds the reserve step (two local activities of at most 30
// s each): a running order workflow with no database row older than this
// plus the grace is stuck before it ever had a deadline.
const reserveBudget = time.Minute

// Deps are the services the checker reads.
type Deps struct {
	Stock    *inventory.Store
	Orders   *orderdb.Store
	Temporal client.Client
	// Grace is how long past pay_by an order may stay open; zero means
	// DefaultGrace.
	Grace time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Check checks every SKU MySQL knows, or only skuFilter when it is set
// (an unknown skuFilter is an UnknownSKU error). An
// error means a service could not be read; a breach is a Violation, and
// Report.OK is false when there is any.
func Check(ctx context.Context, deps Deps, skuFilter string) (Report, error) {
	if deps.Stock == nil || deps.Orders == nil || deps.Temporal == nil {
		return Report{}, errors.New("audit: Stock, Orders and Temporal are required")
	}
	c := &checker{deps: deps, now: time.Now, grace: cmp.Or(deps.Grace, DefaultGrace), seen: map[string]bool{}}
	if deps.Now != nil {
		c.now = deps.Now
	}
	c.report.CheckedAt = c.now().UTC()
	c.report.SKUs = []SKUState{} // [] rather than null for scripts
	c.recon = &activities.Reconciler{
		Stock: deps.Stock, Orders: deps.Orders, Temporal: deps.Temporal,
		OrderWorkflowID: workflows.OrderWorkflowID,
	}

	skus := []string{skuFilter}
	if skuFilter == "" {
		var err error
		if skus, err = deps.Orders.SKUIDs(ctx); err != nil {
			return Report{}, fmt.Errorf("audit: %w", err)
		}
	}
	for _, sku := range skus {
		if err := c.checkSKU(ctx, sku); err != nil {
			return Report{}, fmt.Errorf("audit %s: %w", sku, err)
		}
	}
	if err := c.checkPayments(ctx, skuFilter); err != nil {
		return Report{}, fmt.Errorf("audit: %w", err)
	}

	r := c.report
	slices.SortStableFunc(r.Violations, func(a, b Violation) int {
		return cmp.Or(cmp.Compare(a.SKU, b.SKU), cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.OrderID, b.OrderID))
	})
	if r.Violations == nil {
		r.Violations = []Violation{} // [] rather than null for scripts
	}
	r.OK = len(r.Violations) == 0
	return r, nil
}

type checker struct {
	deps   Deps
	now    func() time.Time
	grace  time.Duration
	recon  *activities.Reconciler
	report Report
	// seen dedupes order-level violations found once per SKU of the order.
	seen map[string]bool
}

func (c *checker) add(v Violation) {
	if v.OrderID != "" {
		key := string(v.Kind) + "\x00" + v.OrderID + "\x00" + v.TransactionID
		if c.seen[key] {
			return
		}
		c.seen[key] = true
	}
	c.report.Violations = append(c.report.Violations, v)
}

func (c *checker) checkSKU(ctx context.Context, sku string) error {
	a, err := c.deps.Orders.AuditSKU(ctx, sku)
	if err != nil {
		return err
	}
	inv := a.Inventory
	state := SKUState{
		SKU: sku, Total: inv.Total, Available: inv.Available, Frozen: inv.Frozen, Sold: inv.Sold,
		PendingUnits: a.PendingUnits, PaidUnits: a.PaidUnits,
	}
	c.checkStock(a)
	if inv.RedisResync > 0 {
		// Orders were reserved or closed in MySQL alone; until the
		// resync workflow clears the flag, Redis may differ from MySQL
		// and is not used for this SKU.
		c.report.Warnings = append(c.report.Warnings,
			fmt.Sprintf("%s: redis resync pending (%d degraded moves); reservations are MySQL-only until resync-%s clears it", sku, inv.RedisResync, sku))
	}

	obs, err := c.recon.ObserveStock(ctx, contract.ObserveStockInput{SKUs: []string{sku}})
	if err != nil {
		return err
	}
	state.Redis = obs.Observations[0]
	c.checkRedis(state.Redis)

	if state.OpenWorkflows, err = c.checkDeadlines(ctx, sku); err != nil {
		return err
	}
	c.report.SKUs = append(c.report.SKUs, state)
	return nil
}
