package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/flashsale/flashsale/internal/inventory"
)

// bucketsRequest is the POST /api/v1/admin/skus/{sku}/buckets body.
type bucketsRequest struct {
	Buckets *int `json:"buckets"`
}

// bucketsResponse answers it.
type bucketsResponse struct {
	SKU        string `json:"sku_id"`
	Buckets    int    `json:"buckets"`
	RedisTotal int64  `json:"redis_total"`
}

func decodeBuckets(body []byte) (int, error) {
	var req bucketsRequest
	if err := decodeJSON(body, &req); err != nil {
		return 0, err
	}
	if req.Buckets == nil || *req.Buckets < 1 || *req.Buckets > inventory.MaxBuckets {
		return 0, invalid(fmt.Sprintf("buckets is required, 1-%d", inventory.MaxBuckets))
	}
	return *req.Buckets, nil
}

// resizeBuckets changes a SKU's Redis bucket count while its sale runs
// (inventory.Store.Resize moves units between buckets, never out of Redis),
// then records the count in MySQL so a later preheat or restore uses it.
// Redis goes first: the MySQL column only matters to those later reloads,
// and a retry after a failure in between is safe (Resize is idempotent). A
// SKU MySQL knows but Redis does not (never preheated) only gets the new
// count in MySQL, for its preheat, and answers redis_total 0.
func (s *Server) resizeBuckets(w http.ResponseWriter, r *http.Request) {
	sku, n, err := readSKURequest(w, r, decodeBuckets)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), opTimeout)
	defer cancel()
	// MySQL first as a read: an unknown SKU must not get Redis keys.
	if _, err := s.deps.Store.Inventory(ctx, sku); err != nil {
		s.writeError(w, r, err)
		return
	}
	res, err := s.deps.Stock.Resize(ctx, sku, n)
	if err != nil && !errors.Is(err, inventory.ErrUnknownSKU) {
		s.writeError(w, r, err)
		return
	}
	if _, err := s.deps.Store.SetBuckets(ctx, sku, n); err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, r, http.StatusOK, bucketsResponse{SKU: sku, Buckets: n, RedisTotal: res.RedisTotal})
}
