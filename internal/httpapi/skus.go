package httpapi

import (
	"context"
	"net/http"
	"time"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/internal/catalog"
	"github.com/flashsale/flashsale/internal/identity"
)

// The SKU endpoints decode, call the catalog's use case (the same the CLI
// calls) and encode; the catalog checks the input and owns the steps.

func (s *Server) catalog() catalog.Catalog {
	return catalog.Catalog{DB: s.deps.Store, Redis: s.deps.Stock, Temporal: s.deps.Temporal}
}

// readSKURequest reads what every SKU-addressed request with a body needs: the
// SKU id from the path, then the body (size-capped), decoded strictly.
func readSKURequest[T any](w http.ResponseWriter, r *http.Request, decode func([]byte) (T, error)) (string, T, error) {
	var zero T
	sku, err := skuParam(r)
	if err != nil {
		return "", zero, err
	}
	body, err := readBody(w, r)
	if err != nil {
		return "", zero, err
	}
	in, err := decode(body)
	if err != nil {
		return "", zero, err
	}
	return sku, in, nil
}

func skuParam(r *http.Request) (string, error) {
	sku := r.PathValue("sku")
	return sku, checkID("sku id", sku, flashsale.MaxIDLength)
}

// inventoryResponse is GET /api/v1/inventory/{sku}: Redis
// (redis_available, sold_out, buckets) beside MySQL (the rest). Its names
// are the other answers': redis_available as the live page's, buckets as
// the SKU's definition, sold_out as the live page's.
type inventoryResponse struct {
	SKU            string `json:"sku_id"`
	Total          int64  `json:"total"`
	RedisAvailable int64  `json:"redis_available"`
	DBAvailable    int64  `json:"db_available"`
	Frozen         int64  `json:"frozen"`
	Sold           int64  `json:"sold"`
	SoldOut        bool   `json:"sold_out"`
	Buckets        int    `json:"buckets"`
	// BookingsLeft: catalog.Stock's, for a SKU that deducts at payment.
	BookingsLeft *int64 `json:"bookings_left,omitempty"`
}

// skuEndpoint is every SKU endpoint's door: the SKU from the path, the
// body decoded (none without decode), the use case called within
// opTimeout, and its answer encoded as 200 or its error through the table.
func skuEndpoint[In, Out any](s *Server, decode func([]byte) (In, error),
	call func(ctx context.Context, sku string, in In) (Out, error)) http.HandlerFunc {
	return skuEndpointWithin(s, opTimeout, decode, call)
}

// skuEndpointWithin is skuEndpoint with the use case called within
// timeout.
func skuEndpointWithin[In, Out any](s *Server, timeout time.Duration, decode func([]byte) (In, error),
	call func(ctx context.Context, sku string, in In) (Out, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var in In
		var sku string
		var err error
		if decode == nil {
			sku, err = skuParam(r)
		} else {
			sku, in, err = readSKURequest(w, r, decode)
		}
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), timeout)
		defer cancel()
		out, err := call(ctx, sku, in)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		if a, ok := any(out).(accepted); ok {
			w.Header().Set("Location", a.Location)
			s.writeJSON(w, r, http.StatusAccepted, a.Body)
			return
		}
		s.writeJSON(w, r, http.StatusOK, out)
	}
}

// accepted is a use case's answer that it goes on after the request: 202,
// with where to look in Location.
type accepted struct {
	Location string
	Body     any
}

// getInventory is GET /api/v1/inventory/{sku}: catalog.Stock. It is public,
// and a bot polling it for the sale to start must not cost MySQL and Redis a
// read per request: callers share a snapshot at most a second old
// (snapshots.go), as the live sale page's do. The admin token reads fresh,
// so an operator sees the restock they just made; `starter stock` calls
// catalog.Stock itself and is never cached.
func (s *Server) getInventory(w http.ResponseWriter, r *http.Request) {
	sku, err := skuParam(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), opTimeout)
	defer cancel()
	admin := s.isAdmin(identity.BearerToken(r.Header.Get("Authorization")))
	read := s.stock.get
	if admin {
		read = s.stock.fresh
	}
	out, err := read(ctx, sku)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if !admin {
		// A cache in front (a CDN, a proxy) may share it for as long as we do.
		w.Header().Set("Cache-Control", "public, max-age=1")
	}
	s.writeJSON(w, r, http.StatusOK, out)
}

// stockMaxCached caps the SKUs whose public stock answer is kept.
const stockMaxCached = 256

// errStockBusy: every stock read slot stayed taken.
var errStockBusy = refuse(flashsale.Unavailable, "stock reads busy, retry in a second")

// readStock is one uncached read of GET /api/v1/inventory/{sku}'s answer.
func (s *Server) readStock(ctx context.Context, sku string) (inventoryResponse, error) {
	st, err := s.catalog().Stock(ctx, sku)
	u := st.Units
	return inventoryResponse{SKU: u.SKU, Total: u.Total, RedisAvailable: u.Available, DBAvailable: u.DBAvailable,
		Frozen: u.Frozen, Sold: u.Sold, SoldOut: st.SoldOut, Buckets: st.BucketCount, BookingsLeft: st.BookingsLeft}, err
}

// skuResponse is PUT /api/v1/admin/skus/{sku}.
type skuResponse struct {
	SKU          string `json:"sku_id"`
	Total        int64  `json:"total"`
	Price        int64  `json:"price"`
	Buckets      int    `json:"buckets"`
	PerUserLimit int    `json:"per_user_limit"`
	Queued       bool   `json:"queued,omitempty"`
	flashsale.Terms
	RedisAvailable int64 `json:"redis_available"`
	DBAvailable    int64 `json:"db_available"`
	Verified       bool  `json:"verified"`
}

// putSKU creates or resets a SKU before a sale: the database row, then the
// Redis buckets loaded from it, so Redis never keeps selling a previous
// sale's stock (catalog.Define).
func (s *Server) putSKU() http.HandlerFunc {
	return skuEndpoint(s, decodeSKU, func(ctx context.Context, sku string, in flashsale.SKU) (skuResponse, error) {
		in.ID = sku
		d, err := s.catalog().Define(ctx, in)
		if err != nil {
			return skuResponse{}, err
		}
		// On sale from now: its stock gauges show before the first buyer.
		s.noteSKU(sku)
		inv, pre := d.Inventory, d.Preheat
		return skuResponse{
			SKU: inv.SKU, Total: inv.Total, Price: inv.Price, Buckets: inv.Buckets, PerUserLimit: inv.PerUserLimit, Queued: inv.Queued,
			Terms: inv.Terms, RedisAvailable: pre.RedisAvailable, DBAvailable: inv.Available, Verified: true,
		}, nil
	})
}

type preheatResponse struct {
	SKU            string `json:"sku_id"`
	RedisAvailable int64  `json:"redis_available"`
	DBAvailable    int64  `json:"db_available"`
	Verified       bool   `json:"verified"`
}

// preheat reloads a SKU's Redis buckets from the database's available stock
// and verifies the sum (a mismatch is 409 PREHEAT_MISMATCH).
func (s *Server) preheat() http.HandlerFunc {
	return skuEndpoint(s, nil, func(ctx context.Context, sku string, _ struct{}) (preheatResponse, error) {
		d, err := s.catalog().Preheat(ctx, sku)
		return preheatResponse{SKU: d.Inventory.SKU, RedisAvailable: d.Preheat.RedisAvailable,
			DBAvailable: d.Inventory.Available, Verified: true}, err
	})
}

type restockResponse struct {
	SKU       string `json:"sku_id"`
	RestockID string `json:"restock_id"`
	Quantity  int64  `json:"quantity"`
	// Added is false when this restock id had been applied before.
	Added       bool  `json:"added"`
	Total       int64 `json:"total"`
	DBAvailable int64 `json:"db_available"`
	// OnSale is false when the SKU was never preheated: the units are in
	// the database and the next preheat puts them on sale.
	OnSale bool `json:"on_sale"`
}

// restock adds units mid-sale, idempotent by restock_id (catalog.Restock).
func (s *Server) restock() http.HandlerFunc {
	return skuEndpoint(s, decodeRestock, func(ctx context.Context, sku string, req restockRequest) (restockResponse, error) {
		res, err := s.catalog().Restock(ctx, sku, req.RestockID, req.Quantity)
		return restockResponse{
			SKU: res.SKU, RestockID: res.RestockID, Quantity: res.Quantity, Added: res.Added,
			Total: res.Inventory.Total, DBAvailable: res.Inventory.Available, OnSale: res.OnSale,
		}, err
	})
}

// bucketsResponse answers POST /api/v1/admin/skus/{sku}/buckets.
type bucketsResponse struct {
	SKU            string `json:"sku_id"`
	Buckets        int    `json:"buckets"`
	RedisAvailable int64  `json:"redis_available"`
}

// resizeBuckets changes a SKU's Redis bucket count while its sale runs
// (catalog.Resize).
func (s *Server) resizeBuckets() http.HandlerFunc {
	return skuEndpoint(s, decodeBuckets, func(ctx context.Context, sku string, n int) (bucketsResponse, error) {
		res, err := s.catalog().Resize(ctx, sku, n)
		return bucketsResponse{SKU: res.SKU, Buckets: res.Buckets, RedisAvailable: res.RedisAvailable}, err
	})
}
