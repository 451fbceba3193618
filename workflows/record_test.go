//go:build integration

package workflows_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/temporalproto"
	"go.temporal.io/sdk/client"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/activities/contract"
	"github.com/flashsale/flashsale/internal/app/apptest"
	"github.com/flashsale/flashsale/internal/catalog"
	"github.com/flashsale/flashsale/internal/orders"
	"github.com/flashsale/flashsale/workflows"
)

var record = flag.Bool("record", false, "TestRecord writes the order histories it runs to workflows/testdata")

// TestRecord runs every order path on a real worker and dev server
// (apptest.Start) and checks how each ended; with -record it writes each
// order's history to workflows/testdata/<path>.json, the files
// TestReplayRecordedHistories replays:
//
//	go test -tags integration -count=1 ./workflows -run TestRecord -record
func TestRecord(t *testing.T) {
	ctx := context.Background()
	sys := apptest.Start(t, apptest.Options{Name: "record", PaymentTimeout: 2 * time.Second})
	svc := &orders.Service{Temporal: sys.Temporal, TaskQueue: sys.Config.TaskQueue, Orders: sys.Orders}
	sku, empty := sys.ID+"-rec", sys.ID+"-rec-empty"
	for id, units := range map[string]int64{sku: 10, empty: 0} {
		_, err := sys.Orders.PutSKU(ctx, flashsale.SKU{ID: id, Total: units, Price: 2500, Buckets: 2, PerUserLimit: 1})
		require.NoError(t, err)
		_, err = sys.Stock.Preheat(ctx, id, units, 2)
		require.NoError(t, err)
	}
	place := func(name, user, sku string, want flashsale.Status) string {
		t.Helper()
		id := sys.ID + "-" + name
		res, err := svc.Place(ctx, workflows.OrderInput{OrderID: id, UserID: user, Items: []flashsale.Item{{SKU: sku, Quantity: 1}}})
		require.NoError(t, err)
		require.Equal(t, want, res.Status, name)
		return id
	}
	pay := func(id, txn string, amount int64) workflows.PaymentOutcome {
		t.Helper()
		out, err := svc.Pay(ctx, id, workflows.Payment{TransactionID: txn, Amount: amount, ReceivedAt: time.Now()})
		require.NoError(t, err)
		return out
	}
	ended := func(id string) workflows.OrderView {
		t.Helper()
		var v workflows.OrderView
		require.NoError(t, sys.Temporal.GetWorkflow(ctx, workflows.OrderWorkflowID(id), "").Get(ctx, &v))
		return v
	}

	paths := map[string]string{}
	// paid: reserved, paid in time.
	id := place("paid", "u-paid", sku, flashsale.StatusPendingPayment)
	require.Equal(t, flashsale.StatusPaid, pay(id, id+"-tx", 2500).Status)
	require.Equal(t, flashsale.StatusPaid, ended(id).Status)
	paths["paid"] = id
	// held-paid: placed as the door places a held SKU's order, its input
	// saying so (Deduct hold: ReserveStock makes no booking call), paid.
	id = sys.ID + "-held-paid"
	res, err := svc.Place(ctx, workflows.OrderInput{OrderID: id, UserID: "u-held", Items: []flashsale.Item{{SKU: sku, Quantity: 1}},
		Deduct: flashsale.DeductHold})
	require.NoError(t, err)
	require.Equal(t, flashsale.StatusPendingPayment, res.Status)
	require.Equal(t, flashsale.StatusPaid, pay(id, id+"-tx", 2500).Status)
	require.Equal(t, flashsale.StatusPaid, ended(id).Status)
	paths["held-paid"] = id
	// refund-required: paid, then paid again by another transaction.
	id = place("refund", "u-refund", sku, flashsale.StatusPendingPayment)
	require.Equal(t, flashsale.StatusPaid, pay(id, id+"-tx", 2500).Status)
	second := pay(id, id+"-tx2", 2500)
	require.Equal(t, workflows.RefundRequired, second.Refund)
	require.Equal(t, flashsale.StatusPaid, ended(id).Status)
	paths["refund-required"] = id
	// cancelled by the buyer.
	id = place("cancelled", "u-cancel", sku, flashsale.StatusPendingPayment)
	_, err = svc.Cancel(ctx, id)
	require.NoError(t, err)
	require.Equal(t, flashsale.StatusCancelled, ended(id).Status)
	paths["cancelled"] = id
	// rejected: the SKU is sold out.
	id = place("rejected", "u-rej", empty, flashsale.StatusRejected)
	require.Equal(t, flashsale.SoldOut, ended(id).Reason)
	paths["rejected"] = id
	// expired with a waitlist buyer: the unit goes to the offer, which
	// is paid (waitlist-released, waitlist-offer).
	one := sys.ID + "-rec-one"
	_, err = sys.Orders.PutSKU(ctx, flashsale.SKU{ID: one, Total: 1, Price: 2500, Buckets: 2, PerUserLimit: 1})
	require.NoError(t, err)
	_, err = sys.Stock.Preheat(ctx, one, 1, 2)
	require.NoError(t, err)
	id = place("released", "u-rel", one, flashsale.StatusPendingPayment)
	_, err = sys.Stock.JoinWaitlist(ctx, one, "u-waiting", 100)
	require.NoError(t, err)
	released := ended(id)
	require.Equal(t, flashsale.StatusExpired, released.Status)
	require.Equal(t, flashsale.WaitlistOrderID(id), released.OfferedTo)
	paths["waitlist-released"] = id
	offer := released.OfferedTo
	require.Eventually(t, func() bool {
		v, err := svc.Status(ctx, offer)
		return err == nil && v.Status == flashsale.StatusPendingPayment
	}, 10*time.Second, 50*time.Millisecond)
	require.Equal(t, flashsale.StatusPaid, pay(offer, offer+"-tx", 2500).Status)
	require.Equal(t, flashsale.StatusPaid, ended(offer).Status)
	paths["waitlist-offer"] = offer
	// expired: nobody pays, nobody waits.
	id = place("expired", "u-exp", sku, flashsale.StatusPendingPayment)
	require.Equal(t, flashsale.StatusExpired, ended(id).Status)
	paths["expired"] = id
	// late payment: received after pay_by, the order closes at once and
	// the money is recorded for refund.
	id = place("late", "u-late", sku, flashsale.StatusPendingPayment)
	v, err := svc.Status(ctx, id)
	require.NoError(t, err)
	time.Sleep(time.Until(v.PayBy.Add(500 * time.Millisecond)))
	require.Equal(t, workflows.RefundRequired, pay(id, id+"-tx", 2500).Refund)
	require.Equal(t, flashsale.StatusExpired, ended(id).Status)
	paths["late"] = id

	// The SKU terms' paths (workflows/terms.go), each on a SKU of its own.
	withTerms := func(name string, terms flashsale.Terms) string {
		t.Helper()
		id := sys.ID + "-rec-" + name
		_, err := sys.Orders.PutSKU(ctx, flashsale.SKU{ID: id, Total: 10, Price: 2500, Buckets: 2, PerUserLimit: 1, Terms: terms})
		require.NoError(t, err)
		_, err = sys.Stock.Preheat(ctx, id, 10, 2)
		require.NoError(t, err)
		return id
	}
	// late-captured: money half a second after pay_by on a
	// capture_if_held SKU, while the order holds its unit: PAID.
	id = place("late-captured", "u-late-cap", withTerms("capture", flashsale.Terms{LatePayment: flashsale.LateCaptureIfHeld}),
		flashsale.StatusPendingPayment)
	v, err = svc.Status(ctx, id)
	require.NoError(t, err)
	time.Sleep(time.Until(v.PayBy.Add(500 * time.Millisecond)))
	require.Equal(t, workflows.PaymentOutcome{OrderID: id, TransactionID: id + "-tx", Status: flashsale.StatusPaid}, pay(id, id+"-tx", 2500))
	require.Equal(t, flashsale.StatusPaid, ended(id).Status)
	paths["late-captured"] = id
	// failed-released: a FAILED payment on a release_on_failed_payment SKU
	// closes the order at once.
	id = place("failed-released", "u-failed", withTerms("failed", flashsale.Terms{ReleaseOnFailedPayment: true}),
		flashsale.StatusPendingPayment)
	require.NoError(t, svc.PaymentFailed(ctx, id, id+"-tx"))
	released = ended(id)
	require.Equal(t, flashsale.StatusCancelled, released.Status)
	require.Equal(t, flashsale.PaymentFailed, released.Reason)
	paths["failed-released"] = id
	// hold-extended: the provider extends the hold by 3 s; money after the
	// first deadline and before the second is in time.
	id = place("hold-extended", "u-hold", sku, flashsale.StatusPendingPayment)
	v, err = svc.Status(ctx, id)
	require.NoError(t, err)
	ext, err := svc.ExtendHold(ctx, id, 3*time.Second, "recorded")
	require.NoError(t, err)
	require.Equal(t, v.PayBy.Add(3*time.Second), ext.PayBy)
	_, err = svc.ExtendHold(ctx, id, time.Second, "again")
	require.Equal(t, flashsale.HoldExtended, flashsale.ErrorCode(err))
	time.Sleep(time.Until(v.PayBy.Add(500 * time.Millisecond)))
	require.Equal(t, flashsale.StatusPaid, pay(id, id+"-tx", 2500).Status)
	require.Equal(t, flashsale.StatusPaid, ended(id).Status)
	paths["hold-extended"] = id
	// deferred-paid, deferred-sold-out: a SKU that deducts at payment, one
	// unit, two bookings: the first payment takes the unit, the second
	// finds none and is recorded for refund, its order CANCELLED.
	deferred := sys.ID + "-rec-deferred"
	_, err = catalog.Catalog{DB: sys.Orders, Redis: sys.Stock, Temporal: sys.Temporal}.Define(ctx, flashsale.SKU{
		ID: deferred, Total: 1, Price: 2500, Buckets: 2, PerUserLimit: 1,
		Terms: flashsale.Terms{Deduct: flashsale.DeductPayment, Overbook: 2, PaymentWindow: flashsale.Duration(time.Minute)},
	})
	require.NoError(t, err)
	def1 := place("deferred-paid", "u-def1", deferred, flashsale.StatusPendingPayment)
	def2 := place("deferred-sold-out", "u-def2", deferred, flashsale.StatusPendingPayment)
	place("deferred-none", "u-def3", deferred, flashsale.StatusRejected)
	require.Equal(t, flashsale.StatusPaid, pay(def1, def1+"-tx", 2500).Status)
	late2 := pay(def2, def2+"-tx", 2500)
	require.Equal(t, workflows.RefundRequired, late2.Refund)
	require.Equal(t, flashsale.SoldOut, late2.Reason)
	require.Equal(t, flashsale.StatusPaid, ended(def1).Status)
	soldOut := ended(def2)
	require.Equal(t, flashsale.StatusCancelled, soldOut.Status)
	require.Equal(t, flashsale.SoldOut, soldOut.Reason)
	paths["deferred-paid"], paths["deferred-sold-out"] = def1, def2

	// degraded: Redis known down when the order reserves (the guard open,
	// as after three failed calls), so it is reserved in MySQL alone, then
	// paid. The guard probes Redis again after its cooldown (a second).
	for range 3 {
		done, ok := sys.Guard.Allow()
		require.True(t, ok)
		done(context.DeadlineExceeded)
	}
	require.False(t, sys.Guard.Up())
	id = sys.ID + "-degraded"
	res, err = svc.Place(ctx, workflows.OrderInput{OrderID: id, UserID: "u-deg", Items: []flashsale.Item{{SKU: sku, Quantity: 1}}})
	require.NoError(t, err)
	require.Equal(t, flashsale.StatusPendingPayment, res.Status)
	v, err = svc.Status(ctx, id)
	require.NoError(t, err)
	require.True(t, v.Degraded, "reserved in MySQL alone")
	require.Equal(t, flashsale.StatusPaid, pay(id, id+"-tx", 2500).Status)
	require.Equal(t, flashsale.StatusPaid, ended(id).Status)
	paths["degraded"] = id

	for path, id := range paths {
		events := history(ctx, t, sys.Temporal, workflows.OrderWorkflowID(id))
		require.NotEmpty(t, events)
		if *record {
			require.NoError(t, os.WriteFile(filepath.Join("testdata", path+".json"), events, 0o644))
		}
	}
}

// history is the workflow's history as `temporal workflow show --output
// json` prints it, the form the replayer reads.
func history(ctx context.Context, t *testing.T, c client.Client, workflowID string) []byte {
	t.Helper()
	var h historypb.History
	it := c.GetWorkflowHistory(ctx, workflowID, "", false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		e, err := it.Next()
		require.NoError(t, err)
		h.Events = append(h.Events, e)
	}
	data, err := temporalproto.CustomJSONMarshalOptions{Indent: "  "}.Marshal(&h)
	require.NoError(t, err)
	return data
}

// TestRecordSales runs every sale path on a real worker and dev server and,
// with -record, writes each sale's history to
// workflows/testdata/sale/<path>.json, the files
// TestReplayRecordedSaleHistories replays: a sale opened by its own timer,
// paused, resumed and closed, then ended; one opened early by the open
// Update and closed; one voided.
func TestRecordSales(t *testing.T) {
	ctx := context.Background()
	sys := apptest.Start(t, apptest.Options{Name: "record-sale", PaymentTimeout: 2 * time.Second})
	sales := catalog.Sales{DB: sys.Orders, Temporal: sys.Temporal, TaskQueue: sys.Config.TaskQueue}
	newSKU := func(name string) string {
		t.Helper()
		sku := sys.ID + "-" + name
		_, err := sys.Orders.PutSKU(ctx, flashsale.SKU{ID: sku, Total: 3, Price: 100, Buckets: 2, PerUserLimit: 1})
		require.NoError(t, err)
		_, err = sys.Stock.Preheat(ctx, sku, 3, 2)
		require.NoError(t, err)
		return sku
	}
	control := func(sku, action string, want flashsale.SaleState) {
		t.Helper()
		v, err := sales.Control(ctx, sku, action, "recorded")
		require.NoError(t, err, action)
		require.Equal(t, want, v.State, action)
	}
	ended := func(sku string) workflows.SaleView {
		t.Helper()
		var v workflows.SaleView
		require.NoError(t, sys.Temporal.GetWorkflow(ctx, workflows.SaleWorkflowID(sku), "").Get(ctx, &v))
		return v
	}

	paths := map[string]string{}
	sku := newSKU("timer")
	_, err := sales.Start(ctx, workflows.SaleInput{SKU: sku, OpensAt: time.Now().Add(time.Second)})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		v, err := sales.View(ctx, sku)
		return err == nil && v.State == flashsale.SaleStateOpen
	}, 10*time.Second, 50*time.Millisecond, "opened by its timer")
	control(sku, workflows.UpdateSalePause, flashsale.SaleStatePaused)
	control(sku, workflows.UpdateSaleResume, flashsale.SaleStateOpen)
	control(sku, workflows.UpdateSaleClose, flashsale.SaleStateClosed)
	require.Equal(t, flashsale.SaleStateClosed, ended(sku).State)
	paths["timer-pause-resume-close"] = sku

	sku = newSKU("early")
	_, err = sales.Start(ctx, workflows.SaleInput{SKU: sku, OpensAt: time.Now().Add(time.Hour)})
	require.NoError(t, err)
	control(sku, workflows.UpdateSaleOpen, flashsale.SaleStateOpen)
	control(sku, workflows.UpdateSaleClose, flashsale.SaleStateClosed)
	require.Equal(t, flashsale.SaleStateClosed, ended(sku).State)
	paths["open-update-close"] = sku

	sku = newSKU("void")
	_, err = sales.Start(ctx, workflows.SaleInput{SKU: sku, OpensAt: time.Now().Add(time.Hour)})
	require.NoError(t, err)
	control(sku, workflows.UpdateSaleVoid, flashsale.SaleStateClosed)
	require.True(t, ended(sku).Voided)
	paths["void"] = sku

	// The end (the sale-closes-at patch): a sale with closes_at, its end
	// moved sooner by the closes_at Update, closed by its timer; and the
	// close of a SKU sold without a queue.
	sku = newSKU("closes-at")
	opens := time.Now().Add(time.Second)
	_, err = sales.Start(ctx, workflows.SaleInput{SKU: sku, OpensAt: opens, ClosesAt: opens.Add(time.Hour)})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		v, err := sales.View(ctx, sku)
		return err == nil && v.State == flashsale.SaleStateOpen
	}, 10*time.Second, 50*time.Millisecond, "opened by its timer")
	_, err = sales.MoveEnd(ctx, sku, time.Now().Add(time.Second), "recorded")
	require.NoError(t, err)
	require.Equal(t, flashsale.SaleStateClosed, ended(sku).State)
	paths["closes-at-moved"] = sku

	sku = newSKU("unqueued")
	_, err = sales.Close(ctx, sku)
	require.NoError(t, err)
	require.True(t, ended(sku).Unqueued)
	paths["unqueued-close"] = sku

	for path, sku := range paths {
		events := history(ctx, t, sys.Temporal, workflows.SaleWorkflowID(sku))
		require.NotEmpty(t, events)
		// The histories of earlier code stay as recorded: they pin the
		// branches a patch keeps (docs/versioning.md); only a new path's
		// file is written.
		file := filepath.Join("testdata", "sale", path+".json")
		if _, err := os.Stat(file); *record && os.IsNotExist(err) {
			require.NoError(t, os.WriteFile(file, events, 0o644))
		}
	}
}

// TestRecordCampaign runs a campaign of two SKUs on a real worker and dev
// server: carved, its sales opened by their timers, closed together by the
// close Update, ended, what was left given back. With -record it writes
// workflows/testdata/campaign/close.json (only when missing), the file
// TestReplayRecordedCampaignHistories replays.
func TestRecordCampaign(t *testing.T) {
	ctx := context.Background()
	sys := apptest.Start(t, apptest.Options{Name: "record-campaign", PaymentTimeout: 2 * time.Second})
	var items []contract.CampaignItem
	for i := range 2 {
		sku := fmt.Sprintf("%s-c%d", sys.ID, i)
		_, err := sys.Orders.PutSKU(ctx, flashsale.SKU{ID: sku, Total: 5, Price: 100, Buckets: 2, PerUserLimit: 1})
		require.NoError(t, err)
		_, err = sys.Stock.Preheat(ctx, sku, 5, 2)
		require.NoError(t, err)
		items = append(items, contract.CampaignItem{SKU: sku, FlashPrice: 50, Allocation: 2, PerUserLimit: 1})
	}
	campaigns := catalog.Campaigns{Temporal: sys.Temporal, TaskQueue: sys.Config.TaskQueue}
	id := sys.ID[:8]
	opens := time.Now().Add(2 * time.Second)
	_, err := campaigns.Start(ctx, workflows.CampaignInput{ID: id, OpensAt: opens, ClosesAt: opens.Add(time.Hour), Items: items})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		v, err := campaigns.View(ctx, id)
		return err == nil && v.State == flashsale.SaleStateOpen
	}, 30*time.Second, 100*time.Millisecond)
	_, err = campaigns.Control(ctx, id, workflows.UpdateSaleClose, "recorded")
	require.NoError(t, err)
	var v workflows.CampaignView
	require.NoError(t, sys.Temporal.GetWorkflow(ctx, workflows.CampaignWorkflowID(id), "").Get(ctx, &v))
	require.True(t, v.Ended)
	require.EqualValues(t, 4, v.Total.Returned)
	events := history(ctx, t, sys.Temporal, workflows.CampaignWorkflowID(id))
	file := filepath.Join("testdata", "campaign", "close.json")
	if _, err := os.Stat(file); *record && os.IsNotExist(err) {
		require.NoError(t, os.MkdirAll(filepath.Dir(file), 0o755))
		require.NoError(t, os.WriteFile(file, events, 0o644))
	}
}
