package demo

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/flashsale/flashsale/activities/contract"
	"github.com/flashsale/flashsale/internal/loadgen"
	"github.com/flashsale/flashsale/workflows"
)

// A campaign (starter demo --campaign N, docs/sale-day.md "Campaigns"): N
// SKUs of o.Units each; the campaign carves half of each into its campaign
// SKU at half the price, every item's sale opens at the same opens_at and
// ends at the same closes_at (its timer), each with a crowd of its own
// (o.Buyers / N, as a queued sale's), and what is left of each allocation
// goes back to its SKU.

// CampaignSale runs the campaign of n SKUs and summarizes it: its items'
// crowds added up, and the campaign's report per item and in total.
func (st *Stack) CampaignSale(ctx context.Context, o SaleOptions, n int) (Summary, error) {
	id := "c" + time.Now().UTC().Format("150405")
	alloc, flash := max(o.Units/2, 1), o.Price/2
	var items []contract.CampaignItem
	for i := range n {
		sku := fmt.Sprintf("%s-%d", o.SKU, i)
		if err := st.CreateSKU(ctx, sku, o.Units, o.Price, o.Buckets); err != nil {
			return Summary{}, err
		}
		items = append(items, contract.CampaignItem{SKU: sku, FlashPrice: flash, Allocation: alloc, PerUserLimit: 1})
	}
	started := st.API.Metrics().WorkflowsStarted
	opensAt := time.Now().Add(max(o.OpensIn, 2*time.Second))
	// The crowds play until two payment timeouts and 20 s past the open
	// (queueCrowd.run); the campaign ends by its own timer after them.
	closesAt := opensAt.Add(2*o.PaymentTimeout + 30*time.Second)
	var view workflows.CampaignView
	if err := st.Admin(ctx, http.MethodPost, "/api/v1/admin/campaigns/"+id, map[string]any{
		"opens_at": opensAt, "closes_at": closesAt, "pass_ttl_seconds": 15, "items": items}, &view); err != nil {
		return Summary{}, fmt.Errorf("start the campaign: %w", err)
	}
	if o.Progress != nil {
		fmt.Fprintf(o.Progress, "campaign %s: %d SKUs, %d units each at %d (their own price %d), opens %s, closes %s\n",
			workflows.CampaignWorkflowID(id), n, alloc, flash, o.Price, opensAt.Format(time.TimeOnly), closesAt.Format(time.TimeOnly))
	}
	var wg sync.WaitGroup
	results := make([]loadgen.Result, n)
	opts := make([]SaleOptions, n)
	for i, it := range view.Items {
		io := o
		io.SKU, io.Units, io.Price, io.Progress = it.CampaignSKU, alloc, flash, nil
		io.Buyers, io.Concurrency, io.Seed = max(o.Buyers/n, 1), max(o.Concurrency/n, 1), o.Seed+uint64(i)
		opts[i] = io
		c := &queueCrowd{st: st, o: io, opensAt: opensAt, answers: map[string]int64{},
			client: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
				MaxIdleConnsPerHost: io.Concurrency, MaxConnsPerHost: io.Concurrency * 2}},
			inflight: make(chan struct{}, io.Concurrency), onPaid: func(int64) {}}
		wg.Go(func() { results[i] = c.run(ctx) })
	}
	wg.Wait()
	if ctx.Err() != nil {
		return Summary{}, ctx.Err()
	}
	if o.Progress != nil {
		fmt.Fprintln(o.Progress, "crowds done; the campaign closes at closes_at, its sales settle and end, what is left goes back...")
	}
	wait, cancel := context.WithTimeout(ctx, time.Until(closesAt)+o.PaymentTimeout+3*time.Minute)
	defer cancel()
	if err := st.Backend.Temporal.GetWorkflow(wait, workflows.CampaignWorkflowID(id), "").Get(wait, &view); err != nil {
		return Summary{}, fmt.Errorf("the campaign did not end: %w", err)
	}
	out := Summary{SKU: workflows.CampaignWorkflowID(id), Buyers: o.Buyers, Answers: map[string]int64{}, Campaign: &view,
		WorkflowsStarted: st.API.Metrics().WorkflowsStarted - started}
	for i, io := range opts {
		s, err := st.summarize(ctx, io, results[i], started)
		if err != nil {
			return Summary{}, err
		}
		out.Stock += io.Units
		out.Requests += s.Requests
		for k, v := range s.Answers {
			out.Answers[k] += v
		}
		out.Reserved, out.Paid, out.Cancelled, out.Expired = out.Reserved+s.Reserved, out.Paid+s.Paid, out.Cancelled+s.Cancelled, out.Expired+s.Expired
		out.Pending, out.BackOnSale, out.Sold = out.Pending+s.Pending, out.BackOnSale+s.BackOnSale, out.Sold+s.Sold
		out.Oversold, out.Undersold = out.Oversold+s.Oversold, out.Undersold+s.Undersold
		out.Elapsed = max(out.Elapsed, s.Elapsed)
		if view.Items[i].Report != nil {
			out.RedisAvailable += view.Items[i].Report.Available
		}
		out.UIURL = s.UIURL
	}
	return out, nil
}

// campaignTable is the campaign's report for a person.
func campaignTable(b *strings.Builder, v *workflows.CampaignView) {
	fmt.Fprintf(b, "\ncampaign %s (the campaign workflow's report):\n", v.ID)
	w := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "  sku\tsold as\tflash price\tallocation\tsold\trevenue\treturned to the sku\t")
	for _, it := range v.Items {
		var sold, revenue int64
		if it.Report != nil {
			sold, revenue = it.Report.UnitsSold, it.Report.Revenue
		}
		fmt.Fprintf(w, "  %s\t%s\t%d\t%d\t%d\t%d\t%d\t\n", it.SKU, it.CampaignSKU, it.FlashPrice, it.Allocation, sold, revenue, it.Returned)
	}
	fmt.Fprintf(w, "  total\t\t\t\t%d\t%d\t%d\t\n", v.Total.UnitsSold, v.Total.Revenue, v.Total.Returned)
	_ = w.Flush()
}
