package httpapi

import (
	"context"
	"net/http"
	"time"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/activities/contract"
	"github.com/flashsale/flashsale/internal/catalog"
	"github.com/flashsale/flashsale/workflows"
)

// The operators' campaigns: each decodes, calls catalog.Campaigns (the
// same use case as `starter campaign`) and encodes the campaign's view.

func (s *Server) campaigns() catalog.Campaigns {
	return catalog.Campaigns{Temporal: s.deps.Temporal, TaskQueue: s.deps.Orders.TaskQueue}
}

// startCampaignRequest is POST /api/v1/admin/campaigns/{campaign}.
type startCampaignRequest struct {
	OpensAt        time.Time               `json:"opens_at"`
	ClosesAt       time.Time               `json:"closes_at"`
	PassTTLSeconds int64                   `json:"pass_ttl_seconds"`
	Items          []contract.CampaignItem `json:"items"`
}

// campaignEndpoint is an admin route on {campaign}: its id checked, the
// body decoded (none when decode is nil), the use case called within
// timeout.
func campaignEndpoint[In, Out any](s *Server, timeout time.Duration, decode func([]byte) (In, error),
	call func(ctx context.Context, id string, in In) (Out, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("campaign")
		var in In
		err := workflows.CheckCampaignID(id)
		if err == nil && decode != nil {
			var body []byte
			if body, err = readBody(w, r); err == nil {
				in, err = decode(body)
			}
		}
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), timeout)
		defer cancel()
		out, err := call(ctx, id, in)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		s.writeJSON(w, r, http.StatusOK, out)
	}
}

func decodeCampaign(body []byte) (startCampaignRequest, error) {
	var req startCampaignRequest
	if err := decodeJSON(body, &req); err != nil {
		return req, err
	}
	if req.PassTTLSeconds < 0 || req.PassTTLSeconds > 3600 {
		return req, invalid("pass_ttl_seconds must be between 0 (the default, 60) and 3600")
	}
	return req, nil
}

// startCampaign starts the campaign's workflow and answers once every
// item's allocation is carved and its sale runs. 400 for terms it cannot
// run on, 404 UNKNOWN_SKU, 409 STOCK_DRIFT for an allocation larger than
// the SKU's available stock, 409 SALE_STATE_CONFLICT while a campaign of
// that id runs.
func (s *Server) startCampaign() http.HandlerFunc {
	return campaignEndpoint(s, DefaultSaleControlWait, decodeCampaign,
		func(ctx context.Context, id string, in startCampaignRequest) (workflows.CampaignView, error) {
			return s.campaigns().Start(ctx, workflows.CampaignInput{ID: id, OpensAt: in.OpensAt, ClosesAt: in.ClosesAt,
				PassTTL: time.Duration(in.PassTTLSeconds) * time.Second, Items: in.Items})
		})
}

// getCampaign is GET /api/v1/admin/campaigns/{campaign}. 404 NO_SALE.
func (s *Server) getCampaign() http.HandlerFunc {
	return campaignEndpoint(s, opTimeout, nil, func(ctx context.Context, id string, _ struct{}) (workflows.CampaignView, error) {
		return s.campaigns().View(ctx, id)
	})
}

// controlCampaign is POST /api/v1/admin/campaigns/{campaign}/{action}:
// open, pause, resume, close or void every item's sale together.
func (s *Server) controlCampaign() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		action := r.PathValue("action")
		campaignEndpoint(s, controlTimeout, decodeSaleControl, func(ctx context.Context, id string, in saleControlRequest) (workflows.CampaignView, error) {
			if !in.ClosesAt.IsZero() {
				return workflows.CampaignView{}, flashsale.Errorf(flashsale.Invalid, "closes_at is a sale's action's")
			}
			return s.campaigns().Control(ctx, id, action, in.Reason)
		})(w, r)
	}
}
