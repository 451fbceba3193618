package workflows

import (
	"fmt"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/workflow"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/activities/contract"
)

// offersUnitsOn says whether compensation ending as end offers the order's
// units to the waitlist before putting them on open sale: an expired or
// cancelled order's, and a waitlist offer's that MySQL
// refused because its buyer already holds the limit: the unit was on its
// way to a waiting buyer and goes to the next one. A degraded order's units
// never left Redis's buckets (giveBackUnits).
func (o *order) offersUnitsOn(end outcome) bool {
	switch {
	case o.view.Degraded:
		return false
	case end.status != flashsale.StatusRejected:
		return true
	}
	return o.in.FromOrder != "" && end.reason == flashsale.LimitExceeded
}

// waitlistEligible says whether this order's units may be offered to a
// waiting buyer. A waitlist join names no quantity (a buyer waits for one
// unit), and the hand-over moves an order's markers whole, so only orders of
// exactly one unit of one SKU are offered; any other release goes to open
// sale as before, where the waiting buyers may buy too (the release clears
// the sold-out flag).
func (o *order) waitlistEligible() bool {
	return len(o.in.Items) == 1 && o.in.Items[0].Quantity == 1
}

// offerToWaitlist runs after CloseOrder freed the units in MySQL, instead of
// putting the Redis units straight back. It pops the first waiting buyer
// (idempotent per released order) and starts a new order for them as a
// child workflow; that order's ReserveStock takes this order's Redis units
// over atomically (Store.Transfer), so open sale never sees the unit in
// between and a sold-out SKU stays sold out. It reports whether the units
// were handed on; false means nobody waits and the caller releases them.
//
// The child is abandoned on purpose (ParentClosePolicy ABANDON): it is a
// buyer's order with its own pay-by timer and must outlive this one, which
// ends as soon as the child has started. If the new order is rejected
// (limit, drift) its own compensation releases the units to open sale; if
// it expires or is cancelled it offers them to the next waiting buyer.
//
// MySQL shows the unit available from CloseOrder until the child's
// CreateOrder freezes it again, and Redis holds it under a marker of a
// closed order until the transfer: the reconciler may see that as drift
// once, but it only corrects a drift seen identically twice, and the child
// starts within one workflow task.
func (o *order) offerToWaitlist(ctx workflow.Context) (bool, error) {
	if !o.waitlistEligible() {
		return false, nil
	}
	it := o.in.Items[0]
	var offer contract.OfferToWaitlistResult
	err := o.exec(ctx, "offer unit to waitlist", contract.OfferToWaitlist,
		contract.OfferToWaitlistInput{ReleasedOrderID: o.in.OrderID, SKU: it.SKU}, &offer)
	if err != nil {
		return false, fmt.Errorf("offer to waitlist: %w", err)
	}
	if offer.UserID == "" {
		return false, nil
	}

	child := OrderInput{
		OrderID: flashsale.WaitlistOrderID(o.in.OrderID), UserID: offer.UserID,
		Items: []flashsale.Item{it}, PaymentTimeout: o.in.PaymentTimeout, FromOrder: o.in.OrderID,
	}
	cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
		WorkflowID: OrderWorkflowID(child.OrderID),
		// An offer id (a digest of this order's id) is started once, ever:
		// a closed order of that id is not a slot a second offer may reuse.
		WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		ParentClosePolicy:     enumspb.PARENT_CLOSE_POLICY_ABANDON,
		// Set on start, as the starters do, so the offer is findable in the
		// Web UI by buyer and SKU without an extra event.
		TypedSearchAttributes: OrderSearchAttributes(child, offer.UserDigest),
		StaticSummary:         "waitlist offer of the unit released by order " + o.in.OrderID,
	})
	var exec workflow.Execution
	err = workflow.ExecuteChildWorkflow(cctx, OrderWorkflow, child).GetChildWorkflowExecution().Get(ctx, &exec)
	if err != nil {
		// Only an id used before can refuse the start (the id is a digest
		// of this order's, so another run of this order made the offer).
		// The units are still under this order's markers: put them back on
		// open sale rather than leave them held by nobody.
		o.logger.Error("waitlist offer did not start; releasing the units to open sale",
			"offer_order_id", child.OrderID, flashsale.BuyerLogKey, offer.UserDigest, "error", err)
		return false, nil
	}
	// The buyer by digest (flashsale.BuyerLogKey): the workflow never holds
	// the key, the offer's activity computed it.
	o.logger.Info("released unit offered to waitlist", "offer_order_id", child.OrderID, flashsale.BuyerLogKey, offer.UserDigest)
	o.view.OfferedTo = child.OrderID
	return true, nil
}
