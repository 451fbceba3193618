package workflows

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/activities/contract"
)

// A failing go/no-go just before the open: PreflightSale (which marks the
// sale to open PAUSED in Redis) runs before OpenSale, the sale opens
// PAUSED, and its view names the failing check until it closes.
func (s *saleSuite) TestFailingPreflightOpensPaused() {
	start := s.env.Now()
	in := SaleInput{SKU: "1001", OpensAt: start.Add(time.Hour), ExpectedPeak: 1000}
	s.expectPrepared(in)
	failed := contract.PreflightCheck{Name: "stock:1001", Detail: "mysql and redis disagree"}
	ran := false
	s.env.OnActivity(contract.PreflightSale, mock.Anything, contract.PreflightInput{SKUs: []string{"1001"}, ExpectedPeak: 1000, Hold: true}).
		Return(func(context.Context, contract.PreflightInput) (contract.PreflightReport, error) {
			ran = true
			return contract.PreflightReport{Checks: []contract.PreflightCheck{failed, {Name: "workers", OK: true}},
				Failed: []string{"stock:1001"}}, nil
		}).Once()
	s.env.OnActivity(contract.OpenSale, mock.Anything, contract.SaleRequest{SKU: "1001"}).
		Return(func(context.Context, contract.SaleRequest) (flashsale.OpenedSale, error) {
			s.True(ran, "the go/no-go runs before the open")
			return flashsale.OpenedSale{Seed: "seed", State: flashsale.SaleStatePaused}, nil
		}).Once()
	s.env.RegisterDelayedCallback(func() {
		res, err := s.env.QueryWorkflow(QuerySale)
		s.Require().NoError(err)
		var v SaleView
		s.Require().NoError(res.Get(&v))
		s.Equal(flashsale.SaleStatePaused, v.State)
		s.Equal([]contract.PreflightCheck{failed}, v.Preflight)
	}, 90*time.Minute)
	s.expectState(flashsale.SaleStateClosed, flashsale.SaleStatePrequeue, flashsale.SaleStateOpen, flashsale.SaleStatePaused)
	s.control(2*time.Hour, UpdateSaleClose, "", func(v SaleView) { s.Equal(flashsale.SaleStateClosed, v.State) })
	s.expectEnd(contract.SaleReport{})
	s.env.ExecuteWorkflow(SaleWorkflow, in)
	v := s.result()
	s.Equal([]contract.PreflightCheck{failed}, v.Preflight)
}

// A campaign's terms are checked before its workflow starts: every refusal
// is INVALID_REQUEST.
func TestCheckCampaign(t *testing.T) {
	at := time.Date(2026, 12, 24, 20, 0, 0, 0, time.UTC)
	ok := CampaignInput{ID: "xmas", OpensAt: at, ClosesAt: at.Add(time.Hour),
		Items: []contract.CampaignItem{{SKU: "1001", FlashPrice: 500, Allocation: 10}}}
	require.NoError(t, CheckCampaign(ok))
	for name, change := range map[string]func(*CampaignInput){
		"id too long":            func(in *CampaignInput) { in.ID = "a-campaign-id-too-long" },
		"closes before it opens": func(in *CampaignInput) { in.ClosesAt = at },
		"no item":                func(in *CampaignInput) { in.Items = nil },
		"a sku twice":            func(in *CampaignInput) { in.Items = append(in.Items, in.Items[0]) },
		"no allocation":          func(in *CampaignInput) { in.Items = []contract.CampaignItem{{SKU: "1001", FlashPrice: 1}} },
		"negative price": func(in *CampaignInput) {
			in.Items = []contract.CampaignItem{{SKU: "1001", FlashPrice: -1, Allocation: 1}}
		},
		"a per-buyer limit above 1": func(in *CampaignInput) {
			in.Items = []contract.CampaignItem{{SKU: "1001", FlashPrice: 1, Allocation: 1, PerUserLimit: 2}}
		},
	} {
		in := ok
		change(&in)
		require.Equal(t, flashsale.Invalid, flashsale.ErrorCode(CheckCampaign(in)), name)
	}
}

// A per-buyer limit above 1 would never apply (a pass buys one unit): it is
// refused by name, and 1 or none is accepted.
func TestCheckCampaignRefusesAPerBuyerLimitAbove1(t *testing.T) {
	at := time.Date(2026, 12, 24, 20, 0, 0, 0, time.UTC)
	in := CampaignInput{ID: "xmas", OpensAt: at, ClosesAt: at.Add(time.Hour),
		Items: []contract.CampaignItem{{SKU: "1001", FlashPrice: 500, Allocation: 10, PerUserLimit: 1}, {SKU: "1002", FlashPrice: 5, Allocation: 1}}}
	require.NoError(t, CheckCampaign(in))
	in.Items[1].PerUserLimit = 3
	err := CheckCampaign(in)
	require.Equal(t, flashsale.Invalid, flashsale.ErrorCode(err))
	var e *flashsale.Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, "item 1002: per_user_limit 3: a campaign item sells one unit per buyer (one pass, one unit); leave it out or give 1", e.Message)
}

// A campaign id takes a SKU id's alphabet (its items' SKUs are named after
// it): the doors' message says so, not the order ids' (which allow . : @).
func TestCheckCampaignIDSaysWhatACampaignIDHolds(t *testing.T) {
	require.NoError(t, CheckCampaignID("xmas_2026-a"))
	for _, id := range []string{"x:mas", "x@mas", "x.mas", "", "a-campaign-id-too-long"} {
		err := CheckCampaignID(id)
		require.Equal(t, flashsale.Invalid, flashsale.ErrorCode(err), id)
		var e *flashsale.Error
		require.ErrorAs(t, err, &e)
		require.Equal(t, "campaign_id must be 1-16 characters of A-Z a-z 0-9 _ -", e.Message, id)
	}
}
