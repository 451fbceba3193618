package workflows

import (
	"crypto/sha256"
	"encoding/hex"

	"go.temporal.io/sdk/workflow"

	"github.com/flashsale/flashsale"
)

// Every version branch of OrderWorkflow (and SaleWorkflow's, at the end) is
// here: the change ids, what each changed, the recorded histories
// (workflows/testdata) that pin the old side, and when the old side may go. The rest of the workflow asks the
// predicates below and never calls workflow.GetVersion itself.
//
// Each GetVersion costs a marker event and a TemporalChangeVersion
// visibility write, so a branch is asked only where an order reaches the
// changed code, and a later version may imply earlier ones (settleInTask
// implies bounded-payment and waitlist-offer without asking for them).
//
// OrderWorkflowV2 (issue 26) asks none of them: every predicate answers
// its newest side at once (order.latest), so its histories carry no
// version marker and no TemporalChangeVersion upsert (workflows/testdata/v2-*.json).
// A change that would alter OrderWorkflowV2's histories gets a new type
// (OrderWorkflowV3, started by the starters, the old one kept registered
// until its orders are closed), or Worker Versioning with pinned workflows
// once the cluster's server supports it as stable; not a branch here.
//
// Deploying OrderWorkflowV2: workers that register it before starters (the
// API, the CLI) that start it. A task of a type no polling worker knows
// fails its workflow task and is retried until one does, so the other
// order only delays the first orders.
//
// How OrderWorkflow retires: since issue 26 nothing starts it (the
// starters and the waitlist offers of OrderWorkflowV2 orders start
// OrderWorkflowV2; an OrderWorkflow order's own offers stay OrderWorkflow,
// as its history says). Once no OrderWorkflow runs (an order lives at most
// PAYMENT_TIMEOUT plus a minute of compensation, 16 minutes by default;
// `temporal workflow count --query "WorkflowType = 'OrderWorkflow' AND
// ExecutionStatus = 'Running'"` says 0, and stays 0 for that long, since a
// closing OrderWorkflow may start one offer), this whole file goes: the
// predicates answer true, legacyOfferID and lengthsOnly go, OrderWorkflow
// is unregistered, the histories that are not v2-*.json leave
// workflows/testdata, and RunningOrdersQuery names OrderWorkflowV2 alone.
// Until then, a branch of OrderWorkflow alone may retire as before: delete
// its DefaultVersion side and the histories that pin only it, and keep the
// GetVersion call with the minimum raised (workflow.GetVersion(ctx, id, 1, 1))
// so histories that carry the marker still replay.

// boundedPaymentChangeID versions the bounds on an open order: payment
// activities limited by pay_by (paymentOptions), so an order closes on time
// even when its payment cannot be applied, and the STALLED watch over
// compensation (watchStall). Orders recorded before it (workflows/testdata:
// paid, cancelled, expired, rejected) retried payments without limit and ran
// no watch timer; they replay on DefaultVersion and keep doing so.
//
// Not versioned, on purpose: what the workflow makes of the non-retryable
// answers that are new (TransactionConflict and InvalidRequest from the
// payment activities) or used to fail it (OrderPaid from CloseOrder). Before
// this change those answers were retried forever or failed the workflow, so
// no history continues past one; an order stuck retrying on an old worker is
// set free by the new activities, whatever its version.
//
// Pinned by paid.json, cancelled.json, expired.json, rejected.json
// (DefaultVersion) and conflict-paid.json, conflict-expired.json (1).
// Retire with payment-arrival's old versions, which imply it.
const boundedPaymentChangeID = "bounded-payment"

// bounded reports whether this order runs with boundedPaymentChangeID.
// The first call records the version; later calls return the same answer.
func (o *order) bounded(ctx workflow.Context) bool {
	if o.latest || o.rev >= settleInTask {
		return true // implied; see paymentArrivalChangeID
	}
	return workflow.GetVersion(ctx, boundedPaymentChangeID, workflow.DefaultVersion, 1) >= 1
}

// paymentArrivalChangeID versions judging a payment by when the API
// received it (Payment.ReceivedAt) instead of when the workflow got to it.
// A payment can reach the workflow a moment after the API took it: the pay
// update waits for the order's next workflow task, which may be busy (a
// payment activity retrying) or, with the worker restarting, late. Before
// this change the deadline timer fired at pay_by and such a payment found
// the order closed and was refunded, or its callback was answered 503 while
// it waited. Now the order stays open arrivalGrace past pay_by for money
// received in time; money received after pay_by closes it at once and is
// refunded. Orders recorded before it close at pay_by and judge by the
// workflow's clock; they replay on DefaultVersion.
//
// Version 2 (settleInTask) also settles the order inside the workflow task
// that decides it: ConfirmPayment, and compensation's CloseOrder,
// OfferToWaitlist and ReleaseStock, run as local activities there, the way
// the reservation does, and fall back to regular activities only when a
// dependency does not answer in time (inTaskFirst). Each regular activity costs
// the server three state transitions and a task round trip more. Version 2
// implies boundedPaymentChangeID and waitlistChangeID without asking for
// them, so their markers (and the TemporalChangeVersion visibility upsert
// each GetVersion makes) are no longer written either. One change id for
// both, because every GetVersion costs a marker and a visibility write.
const paymentArrivalChangeID = "payment-arrival"

// Versions of paymentArrivalChangeID.
const (
	judgedByArrival workflow.Version = 1
	settleInTask    workflow.Version = 2
)

// Pinned by arrival-paid.json, arrival-late.json, arrival-expired.json
// (judgedByArrival) and the settle-*.json histories (settleInTask); every
// order recorded before it replays on DefaultVersion. Retire version 1 and
// DefaultVersion together, once no open order predates settleInTask.

// paymentVersion records or reads this order's paymentArrivalChangeID
// version; called once, when the order starts waiting for money.
func (o *order) paymentVersion(ctx workflow.Context) workflow.Version {
	if o.latest {
		return o.rev // settleInTask, set at the start
	}
	o.rev = workflow.GetVersion(ctx, paymentArrivalChangeID, workflow.DefaultVersion, settleInTask)
	return o.rev
}

// waitlistChangeID versions the waitlist offer in compensation. Orders
// recorded before it (workflows/testdata) released their units straight
// after CloseOrder; replaying them must not find an offer activity there.
const waitlistChangeID = "waitlist-offer"

// Pinned by the settle-waitlist-*.json histories (implied by settleInTask)
// and by every history before it (no offer). Retire with payment-arrival's
// old versions.

// offersToWaitlist reports whether this order offers released units to the
// waitlist at all (waitlistChangeID).
func (o *order) offersToWaitlist(ctx workflow.Context) bool {
	if o.latest || o.rev >= settleInTask {
		return true // implied: no marker, no visibility write
	}
	return workflow.GetVersion(ctx, waitlistChangeID, workflow.DefaultVersion, 1) >= 1
}

// validateChangeID versions validating the order with
// flashsale.Order.Validate (the id alphabet, the reserved wl- prefix, a
// waitlist offer's id) instead of the workflow's own length checks. Only an
// order the new rules refuse and the old ones accept asks for it, so every
// other order's history is as before and carries no marker; such an order
// recorded before the change replays on DefaultVersion and goes on.
const validateChangeID = "validate-order"

// Pinned by validate-rejected.json (version 1); every earlier history
// replays on DefaultVersion without asking (its orders pass the new rules).
// Retire once no open order predates it: then validate is Validate alone.

// validatesStrictly reports, for an order the new rules refuse and the old
// accept, whether it is judged by the new ones.
func (o *order) validatesStrictly(ctx workflow.Context) bool {
	if o.latest {
		return true
	}
	return workflow.GetVersion(ctx, validateChangeID, workflow.DefaultVersion, 1) >= 1
}

// offerIDChangeID versions two mends of the offer, asked for only where an
// order reaches them, so no other order's history carries its marker:
//
//   - The offer's id is flashsale.WaitlistOrderID, a digest of the released
//     order's id, and the child is started with a reuse policy that refuses
//     any id used before. Offers recorded before it (legacyOfferID) kept a
//     short id raw and hashed a long one, so two releases could name one
//     offer, and the second run of that id took over the first's order.
//   - An offer rejected because its buyer holds the per-user limit offers
//     its unit to the next waiting buyer (offersUnitsOn); before, the unit
//     went to open sale and the buyers still waiting were passed over.
//
// Pinned by settle-waitlist-released.json (its unit offered as
// wl-released-917, the raw id) on DefaultVersion, with settle-waitlist-offer.json
// (that offer, paid: it replays past validate-order's DefaultVersion, as its
// id is not the digest), and by offerid-cancelled.json and
// offerid-rejected-next.json on 1.
const offerIDChangeID = "waitlist-offer-id"

// Retire once no open order predates it (issue 21, 2026-12): then
// legacyOfferID goes, and offerStart always names the digest.

// offersByDigest reports whether this order's offers follow
// offerIDChangeID. Asked only where an offer is made or a rejected offer
// would pass its unit on.
func (o *order) offersByDigest(ctx workflow.Context) bool {
	if o.latest {
		return true
	}
	return workflow.GetVersion(ctx, offerIDChangeID, workflow.DefaultVersion, 1) >= 1
}

// legacyOfferID is the offer id of orders recorded before offerIDChangeID.
// Delete it with that branch, once no open order predates it.
func legacyOfferID(releasedOrderID string) string {
	id := flashsale.WaitlistOrderPrefix + releasedOrderID
	if len(id) <= flashsale.MaxIDLength {
		return id
	}
	sum := sha256.Sum256([]byte(releasedOrderID))
	return flashsale.WaitlistOrderPrefix + hex.EncodeToString(sum[:16])
}

// saleEndChangeID versions SaleWorkflow's end (issue 23): a void also
// refunds the sale's paid orders, and a closed sale waits for its last
// orders, checks MySQL and Redis agree, records its report and removes its
// Redis keys before it completes. Sales recorded before it
// (workflows/testdata/sale) completed at the close; they replay on
// DefaultVersion. Asked where a void refunds and where the closed sale
// would end; the first ask records it.
//
// Pinned by workflows/testdata/sale/timer-pause-resume-close.json and
// open-update-close.json (DefaultVersion) and end-*.json (1). Retire once
// no sale started before the change runs.
const saleEndChangeID = "sale-end"

// ends reports whether this sale runs with saleEndChangeID.
func (s *saleRun) ends(ctx workflow.Context) bool {
	return workflow.GetVersion(ctx, saleEndChangeID, workflow.DefaultVersion, 1) >= 1
}
